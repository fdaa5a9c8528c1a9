package backends

import (
	"math/rand/v2"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/locks"
)

// NoLock takes no lock at all: the broken control, which a run with more
// than one client must find invalid.
type NoLock struct{ lockless }

// Name implements Backend.
func (NoLock) Name() string { return "nolock" }

// About implements Backend.
func (NoLock) About() string { return "broken control" }

// Lease implements Backend.
func (NoLock) Lease(int64) checkers.Lease { return noLease("nolock takes no lock at all") }

// Client implements Backend.
func (NoLock) Client(Spec, locks.Trace, locks.Failpoint, *rand.Rand) (Client, error) {
	return Client{}, nil
}
