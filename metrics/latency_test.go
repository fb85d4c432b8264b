package metrics

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rlserver/rlserver/server"
)

// histogram collects l's histogram of class.
func histogram(t *testing.T, l *Latency, class string) *dto.Histogram {
	t.Helper()
	ch := make(chan prometheus.Metric, 2)
	l.Collect(ch)
	close(ch)
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		if out.GetLabel()[0].GetValue() == class {
			return out.Histogram
		}
	}
	t.Fatalf("no histogram for class %q", class)
	return nil
}

// A pipeline of n commands counts n observations of its duration, in the
// bucket of that duration and every one above it.
func TestLatencyCountsEachCommandOfAPipeline(t *testing.T) {
	l := NewLatency()
	l.Answered(server.ClassKeyed, 16, 300*time.Microsecond)
	l.Answered(server.ClassKeyed, 1, 3*time.Second)
	l.Answered(server.ClassServer, 2, 40*time.Microsecond)
	l.Answered(server.ClassKeyed, 5, time.Minute) // beyond the last bound: +Inf only

	h := histogram(t, l, "keyed")
	if h.GetSampleCount() != 22 {
		t.Errorf("count %d, want 22", h.GetSampleCount())
	}
	if want := 16*300e-6 + 3 + 5*60; math.Abs(h.GetSampleSum()-want) > 1e-9 {
		t.Errorf("sum %v, want %v", h.GetSampleSum(), want)
	}
	for _, b := range h.GetBucket() {
		var want uint64
		switch ub := b.GetUpperBound(); {
		case ub < 300e-6:
			want = 0
		case ub < 3:
			want = 16
		default:
			want = 17
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if s := histogram(t, l, "server"); s.GetSampleCount() != 2 || s.GetBucket()[0].GetCumulativeCount() != 2 {
		t.Errorf("server class: %v", s)
	}
}

// Answered costs no allocation, and is safe from many connections at once.
func TestLatencyAnsweredAllocatesNothing(t *testing.T) {
	l := NewLatency()
	var obs server.Observer = l
	if n := testing.AllocsPerRun(1000, func() { obs.Answered(server.ClassKeyed, 16, time.Millisecond) }); n != 0 {
		t.Errorf("%v allocations per call", n)
	}
	l = NewLatency()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				l.Answered(server.ClassKeyed, 2, time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if h := histogram(t, l, "keyed"); h.GetSampleCount() != 16000 || math.Abs(h.GetSampleSum()-16) > 1e-6 {
		t.Errorf("after 8x1000 concurrent pipelines of 2: count %d sum %v, want 16000 and 16", h.GetSampleCount(), h.GetSampleSum())
	}
}

// BenchmarkLatencyAnswered measures one pipeline's report, from as many
// goroutines as there are CPUs, all on the same histogram.
func BenchmarkLatencyAnswered(b *testing.B) {
	l := NewLatency()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Answered(server.ClassKeyed, 16, 700*time.Microsecond)
		}
	})
}
