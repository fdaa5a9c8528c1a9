// Package locks holds the clients of the lock services under test, behind the
// Locker interface the workloads use.
package locks

import (
	"context"
	"errors"
	"time"
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
	// Granted is what proves the lease: when the request that granted it
	// was sent, on the Trace's clock, and the time to live it was granted
	// for. The service set the lease's expiry after that send, so the lease
	// lasted at least until sent + ttl, less the service's own tolerance.
	Granted() (sent int64, ttl time.Duration)
}

// Trace is told of every renewal of a lease as it happens, so that a
// history can prove how long each lease certainly lasted. A nil Trace
// records nothing.
type Trace interface {
	// Now reads the run's clock.
	Now() int64
	// Renew is called just before a renewal is sent; the function it
	// returns is called with the outcome: err nil when the service renewed
	// the lease for ttl, err wrapping ErrNotHeld
	// when it certainly did not renew it, any other error when unknown.
	Renew() (done func(ttl time.Duration, err error))
}

// Failpoint is called by a client when it reaches a named point of its
// code, and returns when the client may go on, reporting whether it was
// held there: the nemesis arms one to strike a client in a window one
// round trip wide, which random timing would almost never hit. A nil
// Failpoint lets every point pass.
type Failpoint func(point string) (held bool)

// Points in the lock clients' code that a Failpoint can hold.
const (
	// FailAcquired: the service has granted the lock and Acquire has not
	// returned yet; in setnx-expire, SETNX has set the key and EXPIRE has
	// not been sent.
	FailAcquired = "acquired"
	// FailBeforeDelete: the holder is releasing and the request that
	// deletes the key is about to be sent; in get-del-release, after the
	// GET that found the key still its own.
	FailBeforeDelete = "before-delete"
	// FailReplyHeld: the service's reply to a request that changed it (in
	// ZooKeeper's recipe, the create of the contender's znode) has reached
	// the client's socket and is held there unread. A client held there
	// loses the reply: when it goes on, its connection resets, as when a
	// link fails after the request was delivered and applied.
	FailReplyHeld = "reply-held"
)

// hold stops at point when f says so, and reports whether it did.
func (f Failpoint) hold(point string) bool {
	return f != nil && f(point)
}

// now reads t's clock, or 0 without a Trace.
func now(t Trace) int64 {
	if t == nil {
		return 0
	}
	return t.Now()
}

// renewing announces a renewal to t, returning how to report its outcome.
func renewing(t Trace) func(time.Duration, error) {
	if t == nil {
		return func(time.Duration, error) {}
	}
	return t.Renew()
}
