//go:build unix

package memory_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// BenchmarkAppendLiveConcurrent measures the appends of memctl serve's turns with 50 agents
// at once, each appending one message at a time to its own thread (group commit batches
// them): the wall time and the process's CPU time (user and system) per append.
//
//	go test ./memory -run '^$' -bench AppendLiveConcurrent -benchtime 5000x
func BenchmarkAppendLiveConcurrent(b *testing.B) {
	const agents = 50
	ctx := context.Background()
	s, _ := storetest.Open(b)
	text := strings.Repeat("context ", 20)
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	b.ResetTimer()
	for a := range agents {
		wg.Go(func() {
			thread := fmt.Sprint("agent-", a)
			for i := a; i < b.N; i += agents {
				if _, err := s.Append(ctx, thread, []chat.Message{chat.TextMessage("user", fmt.Sprintf("turn %d: %s", i, text))}, memory.AppendOptions{Live: true}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-us/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
