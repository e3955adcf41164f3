package tokenizer

import (
	"runtime"
	"strings"
	"testing"
)

// loop runs f b.N times and, besides the wall-clock figures, reports the CPU time of the
// benchmark's thread per operation (cpu-ns/op) and, if size > 0, the throughput by it
// (cpu-MB/s): figures that other processes on a busy machine inflate less.
func loop(b *testing.B, size int, f func()) {
	if size > 0 {
		b.SetBytes(int64(size))
	}
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPUTime()
	for b.Loop() {
		f()
	}
	if cpu := threadCPUTime() - start; cpu > 0 && start > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		if size > 0 {
			b.ReportMetric(float64(size)*float64(b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
		}
	}
}

// BenchmarkEncode encodes the concatenated text of the testdata conversations with this package
// and with tiktoken-go. Encodings are loaded outside the timing.
func BenchmarkEncode(b *testing.B) {
	text := strings.Join(conversationTexts(b), "\n")
	for _, name := range encodings {
		b.Run(name, func(b *testing.B) {
			b.Run("ours", func(b *testing.B) {
				e := mustLoad(b, name)
				loop(b, len(text), func() { e.Encode(text) })
			})
			b.Run("ours-count", func(b *testing.B) {
				e := mustLoad(b, name)
				loop(b, len(text), func() { e.Count(text) })
			})
			b.Run("tiktoken-go", func(b *testing.B) {
				r := reference(b, name)
				loop(b, len(text), func() { r.EncodeOrdinary(text) })
			})
		})
	}
}

// BenchmarkEncodeMessages encodes the conversations' texts one by one, as a token counter sees
// them (many short strings).
func BenchmarkEncodeMessages(b *testing.B) {
	texts := conversationTexts(b)
	size := 0
	for _, s := range texts {
		size += len(s)
	}
	for _, name := range encodings {
		b.Run(name, func(b *testing.B) {
			e := mustLoad(b, name)
			loop(b, size, func() {
				for _, s := range texts {
					e.Count(s)
				}
			})
		})
	}
}

// BenchmarkSplit runs only the pre-tokenizer over the conversations' text.
func BenchmarkSplit(b *testing.B) {
	text := strings.Join(conversationTexts(b), "\n")
	for _, name := range encodings {
		b.Run(name, func(b *testing.B) {
			e := mustLoad(b, name)
			t := e.classes
			loop(b, len(text), func() {
				for p := 0; p < len(text); {
					if e.o200k {
						p = t.splitO200k(text, p)
					} else {
						p = t.splitCL100k(text, p)
					}
				}
			})
		})
	}
}

// BenchmarkLoad parses an encoding's rank file (Load itself does this once per process).
func BenchmarkLoad(b *testing.B) {
	for _, name := range encodings {
		b.Run(name, func(b *testing.B) {
			classes() // built once per process, shared by the encodings
			loop(b, 0, func() {
				if _, err := load(name); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkClasses builds the rune class table (once per process).
func BenchmarkClasses(b *testing.B) {
	loop(b, 0, func() { buildClasses() })
}

// BenchmarkLongPiece counts one unbroken word of 1 MiB: a single piece, merged with the heap.
func BenchmarkLongPiece(b *testing.B) {
	e, err := Builtin("o200k_base")
	if err != nil {
		b.Fatal(err)
	}
	s := strings.Repeat("x", 1<<20)
	loop(b, len(s), func() { e.Count(s) })
}
