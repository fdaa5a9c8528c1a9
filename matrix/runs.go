package matrix

import "github.com/lockbench/lockbench/config"

// ForRun is what the matrix expects of a run with these fields of its
// configuration (nemesis joined with config.Combine, as cells name it).
// Runs do not record their cell's expectation, so whatever judges runs
// outside a matrix (a comparison against a baseline) asks the rules here.
// A known-broken variant expects what its mutants entry does; any other
// run, what the rules say of its cell.
func (e *Expectations) ForRun(backend, workload, nemesis, fence, store, variant string) string {
	c := Cell{Backend: backend, Workload: workload, Nemesis: nemesis, Fence: fence, Store: store}
	if variant != "" && variant != config.Correct {
		for i, m := range e.Mutants {
			if m.Backend == backend && m.Variant == variant {
				c.Mutant, c.Variant = &e.Mutants[i], variant
				break
			}
		}
	}
	x, _ := e.For(c)
	return x
}
