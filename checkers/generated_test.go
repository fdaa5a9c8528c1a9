package checkers

import (
	"bytes"

	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// generateRun simulates spec and reads it back as a check does: decoding
// gives every string of every event its own allocation, which the
// checkers' memory traffic depends on, where the simulation shares them.
func generateRun(spec simulate.Spec) Input {
	var h, l bytes.Buffer
	if err := simulate.Generate(spec).Encode(&h, &l); err != nil {
		panic(err)
	}
	in := Input{Key: "x", Lease: Lease{TTL: simulate.LeaseTTL, SlackFixed: 1e6, SlackPPM: 500}}
	var err error
	if in.History, err = history.Decode(&h); err != nil {
		panic(err)
	}
	if in.Store, err = store.ReadLog(&l); err != nil {
		panic(err)
	}
	return in
}
