package matrix

import (
	"strings"

	"github.com/lockbench/lockbench/config"
)

// ForRun is what the matrix expects of a run with this configuration:
// what the rules say of the cell it would be, its sweep axes included.
// Runs do not record their cell's expectation, so whatever judges runs
// outside a matrix (a comparison against a baseline) asks the rules here.
// A known-broken variant expects what its mutants entry does; any other
// run, what the rules say of its cell.
func (e *Expectations) ForRun(cfg config.Config) string {
	c := Cell{Backend: cfg.Backend, Workload: cfg.Workload, Nemesis: strings.Join(cfg.Nemesis, config.Combine),
		Fence: string(cfg.Fence), Store: cfg.Store, TTL: cfg.TTL, Concurrency: cfg.Concurrency, RTT: cfg.RTT.D().String(),
		Variant: cfg.Variant, OnLockError: cfg.OnLockError, CheckLease: OnOff(cfg.CheckLease), Work: cfg.Work}
	if cfg.Variant != "" && cfg.Variant != config.Correct {
		for i, m := range e.Mutants {
			if m.Backend == cfg.Backend && m.Variant == cfg.Variant {
				c.Mutant = &e.Mutants[i]
				break
			}
		}
	}
	x, _ := e.For(c)
	return x
}
