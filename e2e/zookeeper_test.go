package e2e

import (
	"context"
	"errors"
	"io"
	"log"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/nemesis"
)

// zkEnsemble starts ZooKeeper's layout as a run starts it (on its own
// image, its members able to cut links) next to an idle client, and waits
// until the ensemble is ready: every member serves and one leads.
func zkEnsemble(t *testing.T, cfg *config.Config) (*clusters.Cluster, backends.Layout) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: starts containers")
	}
	ctx := context.Background()
	eng, err := clusters.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	layout := backends.ZooKeeper{}.Layout(cfg)
	var nodes []clusters.Node
	for _, s := range layout.Services {
		n := s.Node
		if n.Image, err = images.EnsureKind(ctx, eng.Client, s.Image, images.Options{Method: images.Auto,
			Mirror: "http://deb.debian.org/debian", Log: io.Discard}); err != nil {
			t.Fatal(err)
		}
		n.Caps = []string{"NET_ADMIN"}
		nodes = append(nodes, n)
	}
	c := faultCluster(t, append(nodes, idleClient("c1"))...)
	for _, s := range layout.Services {
		if _, err := c.WaitReady(ctx, s.Node.Name, time.Minute, s.Probe...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.WaitReady(ctx, nodes[0].Name, time.Minute, layout.Ready...); err != nil {
		t.Fatal(err)
	}
	return c, layout
}

// One ensemble, two questions: does the lock recipe keep its promises
// against the real server, and does a partition of the ensemble act?
func TestZooKeeperEnsemble(t *testing.T) {
	cfg := config.Config{TTL: config.Duration(2 * time.Second)}
	c, layout := zkEnsemble(t, &cfg)
	ctx := context.Background()
	var addrs []string
	for _, s := range layout.Services {
		ip, err := c.IP(ctx, s.Node.Name)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ip+":2181")
	}
	t.Run("recipe", func(t *testing.T) { zkRecipe(t, c, layout, addrs, cfg.TTL) })
	t.Run("partition", func(t *testing.T) { zkPartition(t, c, layout) })
}

// zkRecipe drives two of the backend's own lock clients from here: a
// second contender waits behind the holder's znode and gets a larger token
// once the holder releases; the released znode is gone; and a session cut
// off from every member is reported lost (Curator TN14) sooner than its
// timeout could hand the lock on, after which the other client takes it.
func zkRecipe(t *testing.T, c *clusters.Cluster, layout backends.Layout, addrs []string, ttl config.Duration) {
	ctx := context.Background()
	client := func(name string) locks.Locker {
		cl, err := backends.ZooKeeper{}.Client(backends.Spec{Process: name, LockAddrs: addrs, Key: "recipe", TTL: ttl}, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Lock.Close() })
		return cl.Lock
	}
	a, b := client("a"), client("b")
	// The contenders' znodes, as a third session sees them.
	obs, _, err := zk.Connect(addrs, ttl.D(), zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	contenders := func() []string {
		ch, _, err := obs.Children("/lockbench/lock/recipe")
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	token := func(l locks.Lease) int64 {
		tok, ok := l.Token()
		if !ok {
			t.Fatal("no token")
		}
		return tok
	}

	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := contenders()
	if len(first) != 1 {
		t.Fatalf("holding alone, contenders %v", first)
	}
	type acquired struct {
		l   locks.Lease
		err error
	}
	got := make(chan acquired, 1)
	go func() {
		l, err := b.Acquire(ctx)
		got <- acquired{l, err}
	}()
	eventually(t, "the second contender queues its znode", 10*time.Second, func() bool { return len(contenders()) == 2 })
	select {
	case g := <-got:
		t.Fatalf("b acquired while a held: %v", g.err)
	default:
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g := <-got
	if g.err != nil {
		t.Fatal(g.err)
	}
	if t1, t2 := token(la), token(g.l); t2 <= t1 {
		t.Errorf("tokens %d then %d: not increasing", t1, t2)
	}
	if after := contenders(); len(after) != 1 || slices.Contains(after, first[0]) {
		t.Errorf("after a's release the contenders are %v; a's was %s", after, first[0])
	}
	if err := g.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if left := contenders(); len(left) != 0 {
		t.Errorf("znodes left after both released: %v", left)
	}

	la, err = a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	for _, s := range layout.Services {
		if err := c.Pause(ctx, s.Node.Name); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-la.Lost():
		t.Logf("session loss seen %s after every member froze", time.Since(frozen).Round(time.Millisecond))
	case <-time.After(ttl.D()):
		t.Error("the lease was not lost within the session timeout of every member freezing")
	}
	for _, s := range layout.Services {
		if err := c.Unpause(ctx, s.Node.Name); err != nil {
			t.Fatal(err)
		}
	}
	if err := la.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("release of a lost lease: %v", err)
	}
	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	lb, err := b.Acquire(actx)
	if err != nil {
		t.Fatalf("after a's session was lost: %v", err)
	}
	if t3, t4 := token(la), token(lb); t4 <= t3 {
		t.Errorf("tokens %d then %d: not increasing", t3, t4)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// zkPartition isolates the leader (the seed draws that shape) and proves
// from inside the ensemble that it acted: the old leader, cut off from its
// quorum, stops serving and the other two elect another; after the heal
// the three serve again under one leader.
func zkPartition(t *testing.T, c *clusters.Cluster, layout backends.Layout) {
	ctx := context.Background()
	p := &nemesis.Partition{Cluster: c, Holders: holder("c1"), Topology: backends.Topology(layout)}
	p.Topology.Clients = []string{"c1"}
	p.Topology.Leader = func(ctx context.Context) (string, error) { return layout.Leader(ctx, c) }
	old, err := p.Topology.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inj, err := p.Inject(ctx, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if inj.Shape != "isolate-leader" || inj.Targets[0] != old {
		t.Fatalf("shape %s, sides %v; want isolate-leader of %s", inj.Shape, inj.Targets, old)
	}
	mode := func(node string) string {
		out, _ := c.Exec(ctx, node, "bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/2181 && echo srvr >&3 && timeout 2 cat <&3 | grep -e '^Mode: ' -e 'not currently serving'`)
		return strings.TrimSpace(out)
	}
	eventually(t, "the isolated leader stops serving", 20*time.Second, func() bool { return !strings.HasPrefix(mode(old), "Mode:") })
	eventually(t, "the majority elects another leader", 20*time.Second, func() bool {
		lead, err := layout.Leader(ctx, c)
		return err == nil && lead != old
	})
	if err := p.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitReady(ctx, old, 30*time.Second, layout.Ready...); err != nil {
		t.Fatalf("after heal: %v", err)
	}
	if rules, _ := c.Exec(ctx, old, "iptables", "-S"); strings.Contains(rules, "DROP") {
		t.Fatalf("rules left after heal:\n%s", rules)
	}
}

// faultsHealed returns the nemesis starts of a run, failing the test
// unless each has its stop.
func faultsHealed(t *testing.T, dir string) []history.Event {
	t.Helper()
	var starts []history.Event
	open := 0
	for _, e := range inTimeOrder(t, dir) {
		if e.Process != history.Nemesis || e.Type != history.Info {
			continue
		}
		switch e.F {
		case history.Start:
			open++
			starts = append(starts, e)
		case history.Stop:
			open--
		}
	}
	if open != 0 {
		t.Errorf("%d faults not healed", open)
	}
	return starts
}

// Whole runs on the ensemble (the fault-free ones are in
// TestBackendsWithoutFaults): under client pauses the unfenced lock loses
// updates (Kleppmann; the belief CURATOR-206 records, that ZooKeeper locks
// need no fence, is wrong) while --fence all keeps the data; a frozen
// leader and a partition, in one run, are healed and leave nothing behind.
// The runs are few and short: the JVM ensemble is the slowest to start.
func TestZooKeeperRuns(t *testing.T) {
	common := []string{"run", "--backend", "zookeeper", "--time-limit", "10s", "--nemesis-interval", "2s", "--fault-duration", "3s"}
	cases := []struct {
		name string
		args []string
		want int // -1: any verdict
	}{
		// The pauses strike at failpoint section, between the holder's
		// read and its write: a holder frozen at a random moment often
		// has nothing left to write (CI saw both pauses of a run miss).
		{"pause-unfenced", []string{"--nemesis", "pause", "--failpoint", "section", "--fence", "none", "--seed", "32"}, 1},
		{"pause-fenced", []string{"--nemesis", "pause", "--failpoint", "section", "--fence", "all", "--seed", "32"}, 0},
		// The nemesis waits after the leader's pause until the ensemble
		// has a leader again before the partition's gap begins: 10 s
		// leave the partition no time.
		{"pause-node-partition", []string{"--nemesis", "pause-node,partition", "--fence", "all", "--seed", zkLeaderSeed, "--time-limit", "15s"}, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lockbench(t, nil, append(append([]string{}, common...), c.args...)...)
			defer assertNothingLeft(t, r.runID)
			if c.want >= 0 && r.exit != c.want {
				t.Fatalf("exit %d, want %d\n%s", r.exit, c.want, r.stdout)
			}
			if r.exit > 2 {
				t.Fatalf("exit %d: %s", r.exit, r.stderr)
			}
			health := readTest(t, r.dir).Health
			if !strings.Contains(health, "3 members, leader z") {
				t.Errorf("ZooKeeper readiness before the workload: %q", health)
			}
			starts := faultsHealed(t, r.dir)
			if len(starts) == 0 {
				t.Fatal("no fault was injected")
			}
			if c.name != "pause-node-partition" {
				if len(pausedClients(t, r.dir)) == 0 {
					t.Error("the nemesis paused nobody")
				}
				return
			}
			// The first fault freezes the leader the readiness check
			// named: no fault before it can have moved the leadership.
			first := starts[0]
			if first.Fault != "pause-node" || first.Shape != "leader" || !strings.HasSuffix(health, "leader "+strings.Join(first.Targets, "")) {
				t.Errorf("first fault %s %s on %v; want pause-node of the leader (%s)", first.Fault, first.Shape, first.Targets, health)
			}
			var shapes []string
			for _, s := range starts {
				if s.Fault == "partition" {
					shapes = append(shapes, s.Shape)
				}
			}
			if !slices.Equal(shapes, []string{"isolate-leader"}) {
				t.Errorf("partition shapes %v, want the seed's isolate-leader", shapes)
			}
		})
	}
}

// zkLeaderSeed makes the first fault of pause-node,partition a pause of
// the leader and the second a partition isolating the leader.
const zkLeaderSeed = "16"
