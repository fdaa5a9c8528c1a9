// Package locks holds the clients of the lock services under test, behind the
// Locker interface the workloads use.
package locks

import (
	"context"
	"errors"
)

var (
	// ErrNotAcquired means the lock was certainly not obtained.
	ErrNotAcquired = errors.New("lock not acquired")
	// ErrNotHeld means a release found the lock held by someone else or by
	// nobody: the lease had already been lost.
	ErrNotHeld = errors.New("lock not held")
	// ErrUnknown marks an error whose effect on the lock service is unknown
	// (a timeout, a broken connection): the history records it as info.
	ErrUnknown = errors.New("outcome unknown")
)

// Locker is a client of one lock service, used by one client process.
type Locker interface {
	// Acquire blocks until the lock is held or ctx ends.
	Acquire(ctx context.Context) (Lease, error)
	Close() error
}

// Lease is one holding of the lock.
type Lease interface {
	// Token is the fencing token issued with the lease; ok is false when the
	// lock service issues none.
	Token() (token int64, ok bool)
	// Lost is closed when the client learns that the lease is gone (a
	// renewal failed or the lease expired).
	Lost() <-chan struct{}
	// Release gives the lock up and stops renewing it.
	Release(ctx context.Context) error
}
