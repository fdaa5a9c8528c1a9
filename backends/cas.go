package backends

import (
	"math/rand/v2"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/locks"
)

// CAS takes no lock: each write is conditional on the version read. It is
// the control that needs no lock to stay safe.
type CAS struct{ lockless }

// Name implements Backend.
func (CAS) Name() string { return "cas" }

// About implements Backend.
func (CAS) About() string { return "no lock: conditional writes" }

// Lease implements Backend.
func (CAS) Lease(int64) checkers.Lease {
	return noLease("cas takes no lock: each write is conditional on the version read")
}

// Client implements Backend.
func (CAS) Client(Spec, locks.Trace, locks.Failpoint, *rand.Rand) (Client, error) {
	return Client{CAS: true}, nil
}
