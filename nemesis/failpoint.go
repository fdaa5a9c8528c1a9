package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/clusters"
)

// A failpoint is armed by writing its name into armedFile inside every
// live client's container. The worker, at each named point of its code
// (see Hold), reads that file; when it names the point, the worker writes
// the name into hitFile, says so on its output (HitLine, which the harness
// hands to Holders.WaitHit) and waits there until the file is gone. The
// nemesis reads hitFile back from inside the first client that spoke, to
// prove it is held, acts on it (freezes it, kills it, or merely lets it
// wait: a slow release) and records the fault from that moment, as it
// records any other. Files and docker exec arm and disarm, because they
// work on a frozen process; the output line says which client to look at
// without polling every container.
const (
	armedFile = "/tmp/lockbench-failpoint"
	hitFile   = "/tmp/lockbench-failpoint.hit"
)

// holdPoll is how often a held worker looks whether it may go on.
const holdPoll = 5 * time.Millisecond

// hitPrefix starts the line a worker prints when it is held at a failpoint.
const hitPrefix = `{"failpoint":`

// HitLine is the line a worker prints when it is held at point.
func HitLine(point string) string { return hitPrefix + strconv.Quote(point) + "}" }

// ParseHit reads a HitLine.
func ParseHit(line []byte) (string, bool) {
	rest, ok := strings.CutPrefix(string(line), hitPrefix)
	if !ok {
		return "", false
	}
	point, err := strconv.Unquote(strings.TrimSuffix(rest, "}"))
	return point, err == nil
}

// Hold is the worker's side of a failpoint: at point, when the nemesis
// armed it in this container, it says so through say (which prints
// HitLine) and waits until disarmed. It reports whether it held. It costs
// one failed open per point when nothing is armed.
func Hold(point string, say func(line string)) bool {
	armed, err := os.ReadFile(armedFile)
	if err != nil || strings.TrimSpace(string(armed)) != point {
		return false
	}
	// A worker that cannot show it is held must not hold: the nemesis
	// would not find it and the client would wait for nothing.
	if err := os.WriteFile(hitFile, []byte(point), 0o644); err != nil {
		return false
	}
	say(HitLine(point))
	for {
		time.Sleep(holdPoll)
		if _, err := os.Stat(armedFile); errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
}

// striker arms failpoints in clients and waits for one to be reached.
type striker struct {
	cluster Cluster
	holders Holders
	clients []string
	point   string
	// armed are the clients whose failpoint may be armed or held.
	armed map[string]bool
}

// strike arms the point in every live client and returns the first to
// hold there, proven from inside its container; ErrNoTarget when ctx ends
// first. The others are disarmed at once: one fault strikes one client.
func (s *striker) strike(ctx context.Context) (string, error) {
	live := s.holders.Live(s.clients)
	if len(live) == 0 {
		return "", fmt.Errorf("%w: every client is dead", ErrNoTarget)
	}
	if s.armed == nil {
		s.armed = map[string]bool{}
	}
	after := s.holders.Hits()
	for _, c := range live {
		s.armed[c] = true
		if _, err := s.cluster.Exec(ctx, c, "sh", "-c", fmt.Sprintf("rm -f %s && echo %s > %s", hitFile, s.point, armedFile)); err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("%w: %w", ErrNoTarget, err)
			}
			return "", fmt.Errorf("arm failpoint %s in %s: %w", s.point, c, err)
		}
	}
	target, err := s.holders.WaitHit(ctx, s.point, after)
	if err != nil {
		return "", fmt.Errorf("%w: no client reached failpoint %s: %w", ErrNoTarget, s.point, err)
	}
	out, err := s.cluster.Exec(ctx, target, "cat", hitFile)
	if err != nil || strings.TrimSpace(out) != s.point {
		return "", fmt.Errorf("%s said it reached failpoint %s, but its container says %q: %v", target, s.point, out, err)
	}
	others := map[string]bool{}
	for c := range s.armed {
		if c != target {
			others[c] = true
		}
	}
	if err := s.disarmSome(ctx, others); err != nil {
		return "", err
	}
	for c := range others {
		delete(s.armed, c)
	}
	return target, nil
}

// disarm lets every client it armed go on. A client that died since
// cannot be reached, and holds nothing.
func (s *striker) disarm(ctx context.Context) error { return s.disarmSome(ctx, s.armed) }

// disarmSome disarms the clients in set, forgetting those it disarmed.
func (s *striker) disarmSome(ctx context.Context, set map[string]bool) error {
	return healEach(set, func(n string) error {
		if !slices.Contains(s.holders.Live([]string{n}), n) {
			return nil
		}
		// A client killed a moment ago may not be known dead yet: its
		// container, no longer running, holds nothing to disarm.
		_, err := s.cluster.Exec(ctx, n, "rm", "-f", armedFile, hitFile)
		if errors.Is(err, clusters.ErrNotRunning) {
			return nil
		}
		return err
	})
}

// pointFault is a fault that strikes at a failpoint of its own
// (Kind.Point): it holds the first client to reach the point there until
// healed, or, when reaching the point is the whole of the damage (a reply
// lost), lets it go on as soon as it is proven held.
type pointFault struct {
	name, shape string
	goOn        bool

	mu sync.Mutex
	s  striker
}

func newPointFault(name, shape string, goOn bool, e Env, point string) *pointFault {
	return &pointFault{name: name, shape: shape, goOn: goOn,
		s: striker{cluster: e.Cluster, holders: e.Holders, clients: e.Topology.Clients, point: point}}
}

// Name implements Fault.
func (f *pointFault) Name() string { return f.name }

// Lasts implements Lasting: a fault that lets its client go on at once is
// over when it struck; what the client then did is what the run is there
// to see.
func (f *pointFault) Lasts(scheduled time.Duration) time.Duration {
	if f.goOn {
		return 0
	}
	return scheduled
}

// Inject implements Fault.
func (f *pointFault) Inject(ctx context.Context, _ *rand.Rand) (Injection, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &f.s
	target, _, err := strikeOrHolder(ctx, &s, f.s.cluster, f.s.holders, f.s.clients, f.s.point)
	if err != nil {
		return Injection{}, err
	}
	if f.goOn {
		if err := f.s.disarm(ctx); err != nil {
			return Injection{}, err
		}
	}
	return Injection{Shape: f.shape, Targets: []string{target}}, nil
}

// Heal implements Fault: a client still held goes on; one armed and not
// reached is disarmed.
func (f *pointFault) Heal(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s.disarm(ctx)
}
