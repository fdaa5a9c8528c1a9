package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
)

// A failpoint is armed by writing its name into armedFile inside one
// client's container. The worker, at each named point of its code (see
// Hold), reads that file; when it names the point, the worker writes the
// name into hitFile and waits there until the file is gone. The nemesis
// sees hitFile, acts on the client caught in the window (freezes it, kills
// it, or merely lets it wait: a slow release) and records the fault from
// that moment, as it records any other. Files and docker exec, rather than
// a channel of the worker's own, because they work on a frozen process and
// prove from inside the container that the client reached the point.
const (
	armedFile = "/tmp/lockbench-failpoint"
	hitFile   = "/tmp/lockbench-failpoint.hit"
)

// hitPoll is how often the nemesis looks whether the armed client has
// reached its point; holdPoll how often a held worker looks whether it may
// go on.
const (
	hitPoll  = 50 * time.Millisecond
	holdPoll = 5 * time.Millisecond
)

// Hold is the worker's side of a failpoint: at point, when the nemesis
// armed it in this container, it says so and waits until disarmed. It
// costs one failed open per point when nothing is armed.
func Hold(point string) {
	armed, err := os.ReadFile(armedFile)
	if err != nil || strings.TrimSpace(string(armed)) != point {
		return
	}
	// A worker that cannot say it is held must not hold: the nemesis would
	// never see it and the client would wait for nothing.
	if err := os.WriteFile(hitFile, []byte(point), 0o644); err != nil {
		return
	}
	for {
		time.Sleep(holdPoll)
		if _, err := os.Stat(armedFile); errors.Is(err, os.ErrNotExist) {
			return
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

// strike arms the point in one live client chosen by r and returns that
// client once it holds at the point; ErrNoTarget when ctx ends first.
func (s *striker) strike(ctx context.Context, r *rand.Rand) (string, error) {
	live := s.holders.Live(s.clients)
	if len(live) == 0 {
		return "", fmt.Errorf("%w: every client is dead", ErrNoTarget)
	}
	target := pick(r, live, 1)[0]
	if s.armed == nil {
		s.armed = map[string]bool{}
	}
	s.armed[target] = true
	if _, err := s.cluster.Exec(ctx, target, "sh", "-c", fmt.Sprintf("rm -f %s && echo %s > %s", hitFile, s.point, armedFile)); err != nil {
		return "", fmt.Errorf("arm failpoint %s in %s: %w", s.point, target, err)
	}
	tick := time.NewTicker(hitPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w: %s never reached failpoint %s: %w", ErrNoTarget, target, s.point, ctx.Err())
		case <-tick.C:
		}
		out, err := s.cluster.Exec(ctx, target, "sh", "-c", "cat "+hitFile+" 2>/dev/null; true")
		if err != nil && ctx.Err() == nil {
			return "", fmt.Errorf("failpoint %s in %s: %w", s.point, target, err)
		}
		if strings.TrimSpace(out) == s.point {
			return target, nil
		}
	}
}

// disarm lets every client it armed go on. A client that died since
// cannot be reached, and holds nothing.
func (s *striker) disarm(ctx context.Context) error {
	return healEach(s.armed, func(n string) error {
		if !slices.Contains(s.holders.Live([]string{n}), n) {
			return nil
		}
		_, err := s.cluster.Exec(ctx, n, "rm", "-f", armedFile, hitFile)
		return err
	})
}
