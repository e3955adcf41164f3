package db

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
)

// fileState is what identify found at a database path.
type fileState int

const (
	fileMissing fileState = iota // no file
	fileEmpty                    // a file of zero bytes: a database not written yet
	fileOurs                     // a memcascade database (with or without the application id)
)

// sqliteMagic starts every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// ownTables are tables every memcascade schema has: a database without the application id (one
// created before it existed) is ours only when it has all of them.
var ownTables = []string{"threads", "messages", "compactions", "cascade_attempts", "provider_cooldowns"}

// knownApplications names the application ids of formats a user may point memctl at by mistake
// (from SQLite's registry of application ids).
var knownApplications = map[uint32]string{
	0x47504B47: "a GeoPackage database",
	0x47503130: "a GeoPackage 1.0 database",
	0x47503131: "a GeoPackage 1.1 database",
	0x4D504258: "an MBTiles tileset",
	0x0F055111: "a Fossil global configuration database",
	0x0F055112: "a Fossil repository",
	0x0F055113: "a Fossil checkout database",
}

// identify says whether path holds a memcascade database, nothing yet, or something else (a
// *ForeignError). It only reads: the header with plain file I/O, and when the header carries no
// application id, the schema through a read-only connection that creates no file.
func identify(ctx context.Context, path string) (fileState, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileMissing, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open database: %w", err)
	}
	if st.IsDir() {
		return 0, &ForeignError{Path: path, What: "a directory"}
	}
	if !st.Mode().IsRegular() {
		return 0, &ForeignError{Path: path, What: "not a regular file"}
	}
	if st.Size() == 0 {
		return fileEmpty, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open database: %w", err)
	}
	header := make([]byte, 100)
	_, err = io.ReadFull(f, header)
	f.Close()
	if err != nil || !bytes.HasPrefix(header, sqliteMagic) {
		return 0, &ForeignError{Path: path, What: "not an SQLite database"}
	}
	if id := binary.BigEndian.Uint32(header[68:72]); id != 0 {
		return ownID(path, id)
	}
	// No id in the header: a database created before the id existed, a new one whose id is
	// still in its write-ahead log, or someone else's. Read its schema to tell.
	id, version, tables, err := probe(ctx, path)
	if err != nil {
		return 0, &ForeignError{Path: path, What: fmt.Sprintf("an SQLite database that cannot be read (%v)", err)}
	}
	if id != 0 {
		return ownID(path, id)
	}
	if len(tables) == 0 && version == 0 {
		if unreadLog(path) {
			// Read without its log (see probe), the file may look empty while the log holds
			// someone else's tables: refuse rather than write into it.
			return 0, &ForeignError{Path: path, What: "an SQLite database whose write-ahead log holds changes that cannot be read without writing beside it"}
		}
		return fileEmpty, nil // an SQLite file with nothing in it yet
	}
	missing := slices.DeleteFunc(slices.Clone(ownTables), func(t string) bool { return slices.Contains(tables, t) })
	if version >= 1 && len(missing) == 0 {
		return fileOurs, nil
	}
	return 0, &ForeignError{Path: path, What: describeTables(tables)}
}

// unreadLog reports a non-empty -wal beside path with no -shm: changes probe could not read.
func unreadLog(path string) bool {
	w, err := os.Stat(path + "-wal")
	if err != nil || w.Size() == 0 {
		return false
	}
	_, err = os.Stat(path + "-shm")
	return errors.Is(err, fs.ErrNotExist)
}

func ownID(path string, id uint32) (fileState, error) {
	if id == ApplicationID {
		return fileOurs, nil
	}
	what, ok := knownApplications[id]
	if !ok {
		what = fmt.Sprintf("an SQLite database of another application (application_id 0x%08X%s)", id, asciiID(id))
	}
	return 0, &ForeignError{Path: path, What: what}
}

// asciiID shows an application id as its four bytes when they are printable ASCII, as ids often
// are ("GPKG").
func asciiID(id uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], id)
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return ""
		}
	}
	return fmt.Sprintf(", %q", b[:])
}

func describeTables(tables []string) string {
	if len(tables) == 0 {
		return "an SQLite database with no tables and a schema version of its own"
	}
	const show = 8
	list := strings.Join(tables[:min(len(tables), show)], ", ")
	if len(tables) > show {
		list += fmt.Sprintf(" and %d more", len(tables)-show)
	}
	return "an SQLite database with tables " + list
}

// probe reads a database's application id, schema version and table names without creating
// any file. With no -wal file beside it the file holds every committed change and is read as
// immutable (no lock, no -shm file). With a -wal and its -shm it is read read-only through the
// log. A -wal without its -shm (a copied or crashed file) cannot be read without creating the
// -shm, so the file alone is read, as immutable: see unreadLog.
func probe(ctx context.Context, path string) (id uint32, version int, tables []string, err error) {
	q := url.Values{}
	q.Set("mode", "ro")
	_, werr := os.Stat(path + "-wal")
	_, serr := os.Stat(path + "-shm")
	if errors.Is(werr, fs.ErrNotExist) || errors.Is(serr, fs.ErrNotExist) {
		q.Set("immutable", "1")
	}
	sqldb, err := sql.Open("sqlite", "file:"+url.PathEscape(path)+"?"+q.Encode())
	if err != nil {
		return 0, 0, nil, err
	}
	defer sqldb.Close()
	var sid int64
	if err := sqldb.QueryRowContext(ctx, "PRAGMA application_id").Scan(&sid); err != nil {
		return 0, 0, nil, err
	}
	if err := sqldb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, 0, nil, err
	}
	rows, err := sqldb.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
	if err != nil {
		return 0, 0, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return 0, 0, nil, err
		}
		tables = append(tables, name)
	}
	return uint32(sid), version, tables, rows.Err()
}
