package runner

import (
	"context"
	"sort"
	"sync"

	"github.com/lockbench/lockbench/history"
)

// holders follows, from the clients' events, which of them believe they hold
// the lock: from a successful acquire until they start releasing it or learn
// that the lease is gone.
//
// Clients that take no lock (cas, nolock) count as holders while they are in
// their section, from the read to the write's completion: a pause there is
// the same threat to them.
type holders struct {
	lockless bool
	mu       sync.Mutex
	held     map[string]bool
	// dead are the clients a fault killed: they hold nothing any more,
	// whatever their last events said.
	dead map[string]bool
	// hits are the clients that reported holding at a failpoint, in order.
	hits    []hit
	changed chan struct{}
	// grant is the last client granted the lock, grants how many grants
	// there were.
	grant  string
	grants int
}

type hit struct{ client, point string }

func newHolders(lockless bool) *holders {
	return &holders{lockless: lockless, held: map[string]bool{}, dead: map[string]bool{}, changed: make(chan struct{})}
}

// observeNemesis forgets the clients a fault killed.
func (h *holders) observeNemesis(e history.Event) {
	killed := history.Killed(e)
	if len(killed) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range killed {
		h.dead[c] = true
		delete(h.held, c)
	}
}

// hit records that client holds at a failpoint.
func (h *holders) hit(client, point string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hits = append(h.hits, hit{client, point})
	close(h.changed)
	h.changed = make(chan struct{})
}

// Hits implements nemesis.Holders.
func (h *holders) Hits() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.hits)
}

// wait blocks until found, called with h.mu held after each change,
// finds a client, or ctx ends.
func (h *holders) wait(ctx context.Context, found func() (string, bool)) (string, error) {
	for {
		h.mu.Lock()
		client, ok := found()
		changed := h.changed
		h.mu.Unlock()
		if ok {
			return client, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-changed:
		}
	}
}

// WaitHit implements nemesis.Holders.
func (h *holders) WaitHit(ctx context.Context, point string, after int) (string, error) {
	return h.wait(ctx, func() (string, bool) {
		for _, x := range h.hits[min(after, len(h.hits)):] {
			if x.point == point && !h.dead[x.client] {
				return x.client, true
			}
		}
		return "", false
	})
}

// Live implements nemesis.Holders.
func (h *holders) Live(clients []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range clients {
		if !h.dead[c] {
			out = append(out, c)
		}
	}
	return out
}

func (h *holders) observe(e history.Event) {
	var holds bool
	switch {
	case !h.lockless && e.F == history.Acquire && e.Type == history.OK:
		holds = true
	case !h.lockless && (e.F == history.Release && e.Type == history.Invoke || e.F == history.LeaseLost):
		holds = false
	case h.lockless && e.F == history.Read && e.Type == history.OK:
		holds = true
	case h.lockless && (e.F == history.Write && e.Type != history.Invoke || e.F == history.Read && e.Type != history.Invoke):
		holds = false
	default:
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead[e.Process] {
		return
	}
	if holds {
		h.held[e.Process] = true
		h.grant = e.Process
		h.grants++
	} else {
		delete(h.held, e.Process)
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// WaitHolder implements nemesis.Holders. With several holders (only possible
// once exclusion is already broken) it picks the first by name, so the
// choice does not depend on map order.
func (h *holders) WaitHolder(ctx context.Context) (string, error) {
	return h.wait(ctx, func() (string, bool) {
		names := make([]string, 0, len(h.held))
		for n := range h.held {
			names = append(names, n)
		}
		if len(names) == 0 {
			return "", false
		}
		sort.Strings(names)
		return names[0], true
	})
}

// WaitGrant implements nemesis.Holders.
func (h *holders) WaitGrant(ctx context.Context) (string, error) {
	h.mu.Lock()
	seen := h.grants
	h.mu.Unlock()
	return h.wait(ctx, func() (string, bool) { return h.grant, h.grants > seen })
}
