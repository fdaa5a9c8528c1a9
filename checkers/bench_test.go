package checkers

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// benchLinearTimeout bounds the linearizability search in the benchmarks as
// a run's check does; a benchmark that hits it fails, since a timed-out
// search measures the timeout, not the checker.
const benchLinearTimeout = time.Minute

// benchCheckers are the checkers of each workload, by the name benchmarks
// use.
func benchCheckers(set bool) []Checker {
	if set {
		return []Checker{SetView{Linearizable{Timeout: benchLinearTimeout}}, LostElements{}}
	}
	return []Checker{Linearizable{Timeout: benchLinearTimeout}, Fence{}, LostUpdates{}, Exclusion{}, Progress{MinSections: 5}}
}

// wantVerdict is what a generated run must get: clean runs pass every
// checker, and every stale holder breaks the safety checkers (progress
// only asks that work got done before the first fault, and a stale holder
// is granted nothing while another's lease holds: exclusion holds).
func wantVerdict(spec runSpec, checker string) Verdict {
	if spec.stale && checker != (Progress{}).Name() && checker != (Exclusion{}).Name() {
		return Invalid
	}
	return Valid
}

func TestGeneratedRuns(t *testing.T) {
	for _, spec := range []runSpec{
		{events: 1e4, clients: 5}, {events: 1e4, clients: 50},
		{events: 1e4, clients: 5, stale: true}, {events: 1e4, clients: 50, stale: true},
		{events: 1e4, clients: 5, set: true}, {events: 1e4, clients: 5, set: true, stale: true},
	} {
		in := generateRun(spec)
		for _, c := range benchCheckers(spec.set) {
			name := c.Name()
			if _, ok := c.(SetView); ok {
				name = "set-" + name
			}
			t.Run(fmt.Sprintf("%s/%s", spec, name), func(t *testing.T) {
				r := c.Check(in)
				if want := wantVerdict(spec, c.Name()); r.Valid != want {
					t.Errorf("%s, want %s: %s %s %v", r.Valid, want, r.Summary, r.Reason, r.Counts)
				}
			})
		}
	}
}

func (s runSpec) String() string {
	kind := "clean"
	if s.stale {
		kind = "stale"
	}
	workload := ""
	if s.set {
		workload = "set/"
	}
	return fmt.Sprintf("%sevents=1e%d/clients=%d/%s", workload, int(math.Round(math.Log10(float64(s.events)))), s.clients, kind)
}

// BenchmarkCheckers runs each checker on generated runs of 10⁴ to 10⁶
// events. Each run is generated once, before the checkers' timers start.
// The set workload stops at 10⁴ events: every event carries the whole set,
// so its input grows with the square of its length.
func BenchmarkCheckers(b *testing.B) {
	var specs []runSpec
	for _, events := range []int{1e4, 1e5, 1e6} {
		for _, clients := range []int{5, 50} {
			for _, stale := range []bool{false, true} {
				specs = append(specs, runSpec{events: events, clients: clients, stale: stale})
			}
		}
	}
	for _, stale := range []bool{false, true} {
		specs = append(specs, runSpec{events: 1e4, clients: 5, stale: stale, set: true})
	}
	for _, spec := range specs {
		b.Run(spec.String(), func(b *testing.B) {
			in := generateRun(spec)
			for _, c := range benchCheckers(spec.set) {
				b.Run(c.Name(), func(b *testing.B) {
					b.ReportAllocs()
					want := wantVerdict(spec, c.Name())
					for b.Loop() {
						if r := c.Check(in); r.Valid != want {
							b.Fatalf("%s, want %s: %s %s", r.Valid, want, r.Summary, r.Reason)
						}
					}
					b.ReportMetric(float64(len(in.History))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
				})
			}
		})
	}
}
