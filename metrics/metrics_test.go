package metrics

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
)

// TestHistogramMergeMatchesPooledSamples: four runs' histograms, merged,
// give each percentile within the one bucket that holds the same
// percentile of the four runs' raw samples pooled.
func TestHistogramMergeMatchesPooledSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var pooled []float64
	var merged Histogram
	for range 4 {
		var h Histogram
		for range 5000 {
			ms := math.Exp(rng.NormFloat64()*1.5 + 1) // a long tail of ms
			pooled = append(pooled, ms)
			h.Add(ms, false)
		}
		merged.Merge(h)
	}
	slices.Sort(pooled)
	if merged.N != int64(len(pooled)) {
		t.Fatalf("merged %d samples of %d", merged.N, len(pooled))
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		raw := pooled[int(math.Ceil(q*float64(len(pooled))))-1]
		got, ok := merged.Quantile(q)
		// got is the upper edge of raw's bucket: raw lies in (got/growth, got].
		if !ok || raw > got*(1+1e-9) || raw <= got/growth*(1-1e-9) {
			t.Errorf("p%g = %.4f ms, want the upper edge of the bucket of the pooled %.4f ms", q*100, got, raw)
		}
	}
	if _, ok := (Histogram{}).Quantile(0.5); ok {
		t.Error("an empty histogram has a median")
	}
}

// TestMeasureContention judges a hand-made history, its numbers worked
// out by hand:
//   - c1 asks at 0 ms with no one else about and is granted at 2 ms: an
//     uncontended acquire of 2 ms, a wait of 2 ms;
//   - c2 asks at 5 ms while c1 holds; c1's release completes at 11 ms and
//     c2 is granted at 14 ms: a wait of 9 ms, a hand-over of 3 ms;
//   - c1 asks again at 30 ms, alone, and times out at 130 ms: a wait of
//     100 ms, censored, and no uncontended sample (it was not granted);
//   - c1's renewal sent at 3 ms is acknowledged at 4 ms (1 ms); the one
//     sent at 6 ms gets no answer: one renewal failed;
//   - c1's write is taken, c2's is refused (a CAS retry).
func TestMeasureContention(t *testing.T) {
	ms := func(v float64) int64 { return int64(v * 1e6) }
	ev := func(at float64, p string, typ history.Type, f string) history.Event {
		return history.Event{Time: ms(at), Process: p, Type: typ, F: f}
	}
	h := []history.Event{
		ev(0, "c1", history.Invoke, history.Acquire), ev(2, "c1", history.OK, history.Acquire),
		ev(3, "c1/lease", history.Invoke, history.Renew), ev(4, "c1/lease", history.OK, history.Renew),
		ev(5, "c2", history.Invoke, history.Acquire),
		ev(6, "c1", history.Invoke, history.Write), ev(6, "c1/lease", history.Invoke, history.Renew),
		ev(7, "c1", history.OK, history.Write), ev(8, "c1/lease", history.Info, history.Renew),
		ev(10, "c1", history.Invoke, history.Release), ev(11, "c1", history.OK, history.Release),
		ev(14, "c2", history.OK, history.Acquire),
		ev(16, "c2", history.Invoke, history.Write), ev(17, "c2", history.Fail, history.Write),
		ev(20, "c2", history.Invoke, history.Release), ev(21, "c2", history.OK, history.Release),
		ev(30, "c1", history.Invoke, history.Acquire), ev(130, "c1", history.Fail, history.Acquire),
	}
	for i := range h {
		h[i].Index = int64(i)
	}
	m := Measure(h, nil)
	for _, c := range []struct {
		name      string
		h         Histogram
		n, cens   int64
		quantiles map[float64]float64 // the raw sample each quantile's bucket holds
	}{
		{"acquire wait", m.AcquireWait, 3, 1, map[float64]float64{0.33: 2, 0.5: 9, 1: 100}},
		{"uncontended acquire", m.AcquireUncontended, 1, 0, map[float64]float64{1: 2}},
		{"hand-over", m.Handover, 1, 0, map[float64]float64{1: 3}},
		{"renew rtt", m.RenewRTT, 1, 0, map[float64]float64{1: 1}},
	} {
		if c.h.N != c.n || c.h.Censored != c.cens {
			t.Errorf("%s: %d samples (%d censored), want %d (%d)", c.name, c.h.N, c.h.Censored, c.n, c.cens)
		}
		for q, raw := range c.quantiles {
			if got, _ := c.h.Quantile(q); Bucket(got) != Bucket(raw) && !(raw <= got && raw > got/growth) {
				t.Errorf("%s: q%g = %.4f ms, want the bucket of %g ms", c.name, q, got, raw)
			}
		}
	}
	if m.RenewFailures != 1 || m.WritesOK != 1 || m.WritesFailed != 1 {
		t.Errorf("renew failures %d, writes ok %d, failed %d; want 1, 1, 1", m.RenewFailures, m.WritesOK, m.WritesFailed)
	}
	if m.Seconds != 0.13 {
		t.Errorf("seconds %g, want 0.13", m.Seconds)
	}
}

// TestUncontendedIsAloneThroughout: c1 asks at 0 ms with no one about,
// c2 asks at 1 ms, and c1 is granted at 2 ms: c1's acquire was not alone
// to its end, so it is no uncontended sample. Its twin, with c2 asking
// only at 3 ms (after c1's grant), has one of 2 ms. A third, where c2
// asks at 10.5 ms, between c1's release's invocation (10 ms) and its
// completion (11 ms), has none for c2: the lock was still held.
func TestUncontendedIsAloneThroughout(t *testing.T) {
	ms := func(v float64) int64 { return int64(v * 1e6) }
	for _, c := range []struct {
		c2asks float64
		want   int64
	}{{1, 0}, {3, 1}, {10.5, 1}} {
		h := []history.Event{
			{Time: 0, Process: "c1", Type: history.Invoke, F: history.Acquire},
			{Time: ms(c.c2asks), Process: "c2", Type: history.Invoke, F: history.Acquire},
			{Time: ms(2), Process: "c1", Type: history.OK, F: history.Acquire},
			{Time: ms(10), Process: "c1", Type: history.Invoke, F: history.Release},
			{Time: ms(11), Process: "c1", Type: history.OK, F: history.Release},
			{Time: ms(12), Process: "c2", Type: history.OK, F: history.Acquire},
		}
		history.InTimeOrder(h)
		for i := range h {
			h[i].Index = int64(i)
		}
		m := Measure(h, nil)
		if m.AcquireUncontended.N != c.want {
			t.Errorf("c2 asking at %g ms: %d uncontended acquires, want %d", c.c2asks, m.AcquireUncontended.N, c.want)
		}
		if c.want == 1 {
			if got, _ := m.AcquireUncontended.Quantile(1); !(2 <= got && 2 > got/growth) {
				t.Errorf("c2 asking at %g ms: uncontended %.3f ms, want the bucket of c1's 2 ms", c.c2asks, got)
			}
		}
	}
}

// TestMeasureUnavailability: in the progress checker's golden run
// down-healthy (a single Redis killed at 2.000 s, healthy again at
// 6.600 s), c2 holds the lock until its release at 2.018 s while c1
// asks for it from 2.010 s, and no one is granted it until 6.602 s: one
// fault, 4584 ms unavailable. The run's checkers found nothing, so no
// first anomaly; the same run with an invalid checker's anomaly at
// 3.500 s is 1.5 s from the fault to it.
func TestMeasureUnavailability(t *testing.T) {
	h, err := history.DecodeFile(filepath.Join("..", "checkers", "testdata", "down-healthy", "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	m := Measure(h, []checkers.Result{{Checker: "progress", Valid: checkers.Valid, Counts: map[string]int64{"sections": 21}}})
	if m.Unavailable.N != 1 {
		t.Fatalf("%d unavailability samples, want 1 (one fault)", m.Unavailable.N)
	}
	if got, _ := m.Unavailable.Quantile(1); !(4584 <= got && 4584 > got/growth) {
		t.Errorf("unavailable %.1f ms, want the bucket of 4584 ms", got)
	}
	if m.Sections != 21 || m.FirstAnomaly != nil {
		t.Errorf("sections %d, first anomaly %v", m.Sections, m.FirstAnomaly)
	}
	invalid := checkers.Result{Checker: "lost-updates", Valid: checkers.Invalid, Anomalies: []checkers.Anomaly{{Time: 3500e6}}}
	if m := Measure(h, []checkers.Result{invalid}); m.FirstAnomaly == nil || math.Abs(*m.FirstAnomaly-1.5) > 1e-9 {
		t.Errorf("first anomaly %v, want 1.5 s after the fault", m.FirstAnomaly)
	}
}

func TestCDF(t *testing.T) {
	var h Histogram
	if ms, frac := h.CDF(); ms != nil || frac != nil {
		t.Errorf("empty histogram: CDF %v %v", ms, frac)
	}
	for _, v := range []float64{1, 1, 2, 10} {
		h.Add(v, false)
	}
	ms, frac := h.CDF()
	if len(ms) != 4 || len(frac) != 4 || frac[0] != 0 || frac[1] != 0.5 || frac[2] != 0.75 || frac[3] != 1 {
		t.Fatalf("CDF %v %v", ms, frac)
	}
	if !(ms[0] < 1 && ms[1] >= 1 && ms[2] >= 2 && ms[3] >= 10 && ms[3] < 10*growth) {
		t.Errorf("CDF edges %v", ms)
	}
}
