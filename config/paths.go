package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// UserDir returns the per-user base directory of kind "config" or "data": $XDG_CONFIG_HOME or
// $XDG_DATA_HOME when set to an absolute path (on every platform), else the platform's
// convention: ~/.config and ~/.local/share on Linux and other Unix systems, ~/Library/Application
// Support on macOS, %AppData% (config) and %LocalAppData% (data) on Windows.
func UserDir(kind string) (string, error) {
	env, unix := "XDG_CONFIG_HOME", ".config"
	if kind == "data" {
		env, unix = "XDG_DATA_HOME", filepath.Join(".local", "share")
	}
	if v := os.Getenv(env); v != "" && filepath.IsAbs(v) {
		return v, nil
	}
	switch runtime.GOOS {
	case "windows":
		v := os.Getenv("AppData")
		if kind == "data" {
			v = os.Getenv("LocalAppData")
		}
		if v == "" {
			return "", errors.New("neither %" + env + "% nor the Windows user profile variables are set")
		}
		return v, nil
	case "darwin", "ios":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, "Library", "Application Support"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("neither $" + env + " nor $HOME is set")
	}
	return filepath.Join(home, unix), nil
}

// UserPath returns the per-user config file: config.yaml in the memctl directory of
// UserDir("config"). It may not exist.
func UserPath() (string, error) {
	dir, err := UserDir("config")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "memctl", "config.yaml"), nil
}
