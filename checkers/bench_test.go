package checkers

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers/simulate"
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
func wantVerdict(spec simulate.Spec, checker string) Verdict {
	if spec.Stale && checker != (Progress{}).Name() && checker != (Exclusion{}).Name() {
		return Invalid
	}
	return Valid
}

func TestGeneratedRuns(t *testing.T) {
	for _, spec := range []simulate.Spec{
		{Events: 1e4, Clients: 5}, {Events: 1e4, Clients: 50},
		{Events: 1e4, Clients: 5, Stale: true}, {Events: 1e4, Clients: 50, Stale: true},
		{Events: 1e4, Clients: 5, Set: true}, {Events: 1e4, Clients: 5, Set: true, Stale: true},
	} {
		in := generateRun(spec)
		for _, c := range benchCheckers(spec.Set) {
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

// BenchmarkCheckers runs each checker on generated runs of 10⁴ to 10⁶
// events. Each run is generated once, before the checkers' timers start.
// The set workload stops at 10⁴ Events: every event carries the whole set,
// so its input grows with the square of its length.
func BenchmarkCheckers(b *testing.B) {
	var specs []simulate.Spec
	for _, events := range []int{1e4, 1e5, 1e6} {
		for _, clients := range []int{5, 50} {
			for _, stale := range []bool{false, true} {
				specs = append(specs, simulate.Spec{Events: events, Clients: clients, Stale: stale})
			}
		}
	}
	for _, stale := range []bool{false, true} {
		specs = append(specs, simulate.Spec{Events: 1e4, Clients: 5, Stale: stale, Set: true})
	}
	for _, spec := range specs {
		b.Run(spec.String(), func(b *testing.B) {
			in := generateRun(spec)
			for _, c := range benchCheckers(spec.Set) {
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
