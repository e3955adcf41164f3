package main

import (
	"os"
	"testing"
	"time"

	"github.com/memcascade/memcascade/internal/cputime"
)

// threadsCPU of this process follows the CPU time getrusage reports for it while it works:
// a spin of 200 ms of CPU moves both by about as much.
func TestThreadsCPU(t *testing.T) {
	pid := os.Getpid()
	t0, r0 := threadsCPU(pid), cputime.Self()
	x := 0
	for cputime.Self()-r0 < 200*time.Millisecond {
		for i := range 100000 {
			x += i
		}
	}
	t1, r1 := threadsCPU(pid), cputime.Self()
	got, want := t1-t0, r1-r0
	if got < want*8/10 || got > want*12/10 {
		t.Fatalf("threadsCPU moved %s while getrusage moved %s (x %d)", got, want, x)
	}
}
