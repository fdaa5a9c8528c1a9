package nemesis

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// execLog is a Cluster that records the commands run in its nodes.
type execLog struct {
	Cluster
	mu   sync.Mutex
	cmds []string
	fail string // a command that errors
}

func (e *execLog) Exec(_ context.Context, node string, cmd ...string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := node + ": " + strings.Join(cmd, " ")
	if e.fail != "" && strings.Contains(c, e.fail) {
		return "", errors.New("agent said no")
	}
	e.cmds = append(e.cmds, c)
	return "{}", nil
}

func TestPowerLossCutsAtOnceAndRestartsAfterTheDelay(t *testing.T) {
	for _, c := range []struct {
		target string
		cut    int
	}{{PowerOne, 1}, {PowerMajority, 2}, {PowerAll, 3}, {"", 3}} {
		ex := &execLog{}
		ctx := context.Background()
		f := powerLossKind.New(ctx, Env{Cluster: ex, Holders: fixedHolder("c1"), Topology: Topology{Disks: []string{"e1", "e2", "e3"}},
			PowerTarget: c.target, RestartDelay: 300 * time.Millisecond, TTL: 2 * time.Second})
		if len(ex.cmds) != 3 || !strings.HasSuffix(ex.cmds[0], "lockbench power sync") {
			t.Fatalf("%q: before the run: %v, want every disk made durable", c.target, ex.cmds)
		}
		inj, err := f.Inject(ctx, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		if len(inj.Targets) != c.cut || inj.Shape != cmp.Or(c.target, PowerAll) {
			t.Fatalf("%q: injection %+v, want %d nodes", c.target, inj, c.cut)
		}
		offs := slices.DeleteFunc(slices.Clone(ex.cmds[3:]), func(s string) bool { return !strings.Contains(s, "power off --wait 500ms") })
		if len(offs) != c.cut {
			t.Fatalf("%q: %v, want %d cuts waiting a quarter of the TTL for an fsync", c.target, ex.cmds, c.cut)
		}
		if got := f.(Lasting).Lasts(time.Hour); got != 300*time.Millisecond {
			t.Errorf("lasts %s, want the restart delay", got)
		}
		start := time.Now()
		if err := f.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 250*time.Millisecond {
			t.Errorf("healed %s after the cut, before the restart delay", waited)
		}
		n := len(ex.cmds)
		if err := f.Heal(ctx); err != nil || len(ex.cmds) != n {
			t.Errorf("a second heal did something: %v %v", err, ex.cmds[n:])
		}
		if ons := strings.Count(strings.Join(ex.cmds, "\n"), "power on"); ons != c.cut {
			t.Errorf("%q: %d nodes powered on, want %d", c.target, ons, c.cut)
		}
	}
}

func TestPowerLossWithoutAGrantHitsNothing(t *testing.T) {
	ex := &execLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	f := powerLossKind.New(context.Background(), Env{Cluster: ex, Holders: fixedHolder(""), Topology: Topology{Disks: []string{"redis"}}, TTL: time.Second})
	if _, err := f.Inject(ctx, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("inject with no grant: %v, want ErrNoTarget", err)
	}
	if err := f.Heal(context.Background()); err != nil || len(ex.cmds) != 1 {
		t.Fatalf("heal %v after no cut ran %v", err, ex.cmds)
	}
}

func TestPowerLossNeedsADisk(t *testing.T) {
	if why := powerLossKind.Needs(Topology{Service: []string{"pg"}}); why == "" {
		t.Error("power-loss applies to a service with no data directory on the disk")
	}
	if why := powerLossKind.Needs(Topology{Service: []string{"redis"}, Disks: []string{"redis"}}); why != "" {
		t.Errorf("power-loss refused on Redis: %s", why)
	}
	if got := OnDisk([]string{"redis-server", "--dir", "/d"}, "/d", "x"); !slices.Equal(got[:2], []string{"lockbench", "powerfs"}) || got[len(got)-1] != "/d" {
		t.Errorf("OnDisk: %v", got)
	}
	ex := &execLog{fail: "sync"}
	f := powerLossKind.New(context.Background(), Env{Cluster: ex, Holders: fixedHolder("c1"), Topology: Topology{Disks: []string{"redis"}}, TTL: time.Second})
	if _, err := f.Inject(context.Background(), rand.New(rand.NewPCG(1, 2))); err == nil || errors.Is(err, ErrNoTarget) {
		t.Errorf("a disk that could not be made durable before the run: inject said %v", err)
	}
}
