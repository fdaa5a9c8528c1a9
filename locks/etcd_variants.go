package locks

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The known-broken etcd lock clients.
const (
	// SharedKey is the naive etcd lock of blog posts and hand-rolled
	// helpers: put-if-absent on one fixed key with the session's lease,
	// released by deleting that key by name. etcd's own recipe
	// (concurrency.Mutex) gives every session a key of its own, waits on
	// revisions and deletes only its own key; deleting by name removes the
	// next holder's lock when this holder's lease already ran out.
	SharedKey = "shared-key"
	// IgnoreSessionDone keeps working after its session ended: it never
	// selects on Session.Done(), which is how etcd's client tells a lock
	// holder that its lease, and the lock with it, is gone (the
	// concurrency package's documentation: "Done returns a channel that
	// closes when the lease is orphaned, expires, or is otherwise no longer
	// being refreshed").
	IgnoreSessionDone = "ignore-session-done"
)

// acquireShared puts the fixed key if it is absent, with the session's
// lease, until it succeeds or ctx ends. The token is the put's revision,
// the key's create revision.
func (e *Etcd) acquireShared(ctx context.Context, s *etcdSession) (Lease, error) {
	for {
		resp, err := e.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(e.cfg.Key), "=", 0)).
			Then(clientv3.OpPut(e.cfg.Key, "held", clientv3.WithLease(s.s.Lease()))).
			Commit()
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, err)
		case err != nil:
			e.dropSession(s)
			return nil, fmt.Errorf("%w: put: %w", ErrUnknown, err)
		case resp.Succeeded:
			e.cfg.Failpoint.hold(FailAcquired)
			return &etcdLease{e: e, s: s, token: resp.Header.Revision}, nil
		}
		wait := e.cfg.Retry/2 + time.Duration(e.cfg.Rand.Int64N(int64(e.cfg.Retry)+1))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, ctx.Err())
		case <-s.s.Done():
			return nil, fmt.Errorf("%w: session ended while waiting", ErrNotAcquired)
		case <-time.After(wait):
		}
	}
}

// releaseShared deletes the fixed key, whoever's it is now.
func (e *Etcd) releaseShared(ctx context.Context, s *etcdSession) error {
	resp, err := e.cli.Delete(ctx, e.cfg.Key)
	if err != nil {
		e.dropSession(s)
		return fmt.Errorf("%w: release: %w", ErrUnknown, err)
	}
	if resp.Deleted == 0 {
		return ErrNotHeld
	}
	return nil
}
