package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
)

// Signaler sends a signal to a node's main process.
type Signaler interface {
	Signal(ctx context.Context, node, sig string) error
}

// Holders tells which clients believe they hold the lock right now.
type Holders interface {
	// WaitHolder blocks until some client holds the lock, and returns one.
	WaitHolder(ctx context.Context) (string, error)
}

// PauseHolder freezes the client that holds the lock with SIGSTOP, which
// stops its renewals too, as a long GC pause or a stalled VM would. Its
// lease expires while it sleeps; when it resumes it still believes it holds
// the lock.
type PauseHolder struct {
	Nodes   Signaler
	Holders Holders

	mu     sync.Mutex
	paused map[string]bool
}

// Name implements Fault.
func (p *PauseHolder) Name() string { return "pause" }

// Inject implements Fault.
func (p *PauseHolder) Inject(ctx context.Context, _ *rand.Rand) ([]string, error) {
	holder, err := p.Holders.WaitHolder(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = map[string]bool{}
	}
	// Marked before the signal: if the call fails half way, Heal still
	// sends SIGCONT.
	p.paused[holder] = true
	if err := p.Nodes.Signal(ctx, holder, "SIGSTOP"); err != nil {
		return nil, err
	}
	return []string{holder}, nil
}

// Heal implements Fault.
func (p *PauseHolder) Heal(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.paused))
	for n := range p.paused {
		names = append(names, n)
	}
	sort.Strings(names)
	var first error
	for _, n := range names {
		if err := p.Nodes.Signal(ctx, n, "SIGCONT"); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		delete(p.paused, n)
	}
	return first
}
