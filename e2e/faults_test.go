package e2e

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/nemesis"
)

// Each test here brings up a small cluster of the node image, injects one
// fault through the nemesis, proves from inside the cluster that it really
// happened, heals it and proves that the heal restored the service.

type holder string

func (h holder) WaitHolder(context.Context) (string, error) { return string(h), nil }
func (h holder) WaitGrant(context.Context) (string, error)  { return string(h), nil }

func (holder) Live(clients []string) []string { return clients }

func (holder) Hits() int { return 0 }

func (holder) WaitHit(ctx context.Context, _ string, _ int) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// faultCluster starts nodes (Redis servers and idle clients) on a private
// network of their own and removes them when the test ends.
func faultCluster(t *testing.T, nodes ...clusters.Node) *clusters.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: starts containers")
	}
	ctx := context.Background()
	eng, err := clusters.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	image, err := images.Ensure(ctx, eng.Client, images.Options{Binary: binary, Method: images.Auto,
		Mirror: "http://deb.debian.org/debian", Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	runID := "fault" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", ""))[:min(20, len(t.Name()))]
	c, err := clusters.New(ctx, eng, runID, image)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Down(context.Background()); err != nil {
			t.Error(err)
		}
		assertNothingLeft(t, runID)
	})
	if err := c.StartAll(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Role == "redis" {
			if _, err := c.WaitReady(ctx, n.Name, 30*time.Second, "redis-cli", "ping"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c
}

func redisNode(name string, extra ...string) clusters.Node {
	cmd := append([]string{"redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "",
		"--dir", "/var/lib/redis", "--replica-announce-ip", name}, extra...)
	return clusters.Node{Name: name, Role: "redis", Cmd: cmd, Caps: []string{"NET_ADMIN"}}
}

func idleClient(name string) clusters.Node {
	return clusters.Node{Name: name, Role: "client", Cmd: []string{"sleep", "infinity"}, Caps: []string{"NET_ADMIN"}}
}

// redis runs redis-cli in from against node, bounded to 2 s: a timeout is
// what a cut or frozen node looks like.
func redis(c *clusters.Cluster, from, node string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := c.Exec(ctx, from, append([]string{"timeout", "2", "redis-cli", "-h", node}, args...)...)
	return strings.TrimSpace(out), err
}

func eventually(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s", what, within)
}

func TestFaultPartitionCutsHolderFromRedis(t *testing.T) {
	c := faultCluster(t, redisNode("redis"), idleClient("c1"))
	p := &nemesis.Partition{Cluster: c, Holders: holder("c1"),
		Topology: nemesis.Topology{Service: []string{"redis"}, Clients: []string{"c1"}, WallClock: true}}
	ctx := context.Background()
	inj, err := p.Inject(ctx, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if inj.Shape != "client-holder" {
		t.Fatalf("shape %s", inj.Shape)
	}
	if out, err := redis(c, "c1", "redis", "ping"); err == nil {
		t.Fatalf("c1 still reaches the cut-off node: %q", out)
	}
	if err := p.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := redis(c, "c1", "redis", "ping"); err != nil || out != "PONG" {
		t.Fatalf("after heal: %q, %v", out, err)
	}
	if rules, _ := c.Exec(ctx, "c1", "iptables", "-S"); strings.Contains(rules, "DROP") {
		t.Fatalf("rules left after heal:\n%s", rules)
	}
}

func TestFaultPauseNodeAnswersNothing(t *testing.T) {
	c := faultCluster(t, redisNode("redis"), idleClient("c1"))
	p := &nemesis.PauseNode{Cluster: c, Topology: nemesis.Topology{Service: []string{"redis"}, WallClock: true}}
	ctx := context.Background()
	if _, err := p.Inject(ctx, rand.New(rand.NewPCG(2, 2))); err != nil {
		t.Fatal(err)
	}
	if out, err := redis(c, "c1", "redis", "ping"); err == nil {
		t.Fatalf("a paused node answered %q", out)
	}
	if err := p.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := redis(c, "c1", "redis", "ping"); err != nil || out != "PONG" {
		t.Fatalf("after heal: %q, %v", out, err)
	}
}

func TestFaultKillWithoutPersistenceForgets(t *testing.T) {
	for _, tc := range []struct {
		persistence []string
		survives    bool
	}{
		{[]string{"--appendonly", "no"}, false},
		{[]string{"--appendonly", "yes", "--appendfsync", "always"}, true},
	} {
		name := "none"
		if tc.survives {
			name = "always"
		}
		t.Run(name, func(t *testing.T) {
			c := faultCluster(t, redisNode("redis", tc.persistence...), idleClient("c1"))
			k := &nemesis.Kill{Cluster: c, Topology: nemesis.Topology{Service: []string{"redis"}, WallClock: true}}
			if out, err := redis(c, "c1", "redis", "set", "lock", "held-by-c1"); err != nil || out != "OK" {
				t.Fatalf("set: %q %v", out, err)
			}
			ctx := context.Background()
			if _, err := k.Inject(ctx, rand.New(rand.NewPCG(3, 3))); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the killed node stops answering", 10*time.Second, func() bool {
				_, err := redis(c, "c1", "redis", "ping")
				return err != nil
			})
			if err := k.Heal(ctx); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the restarted node answers", 20*time.Second, func() bool {
				out, err := redis(c, "c1", "redis", "ping")
				return err == nil && out == "PONG"
			})
			out, _ := redis(c, "c1", "redis", "get", "lock")
			if got := out == "held-by-c1"; got != tc.survives {
				t.Fatalf("after restart the lock key reads %q; survives = %v, want %v", out, got, tc.survives)
			}
		})
	}
}

func TestFaultClockJumpExpiresHeldKey(t *testing.T) {
	node := redisNode("redis")
	node.Env, node.Cmd = nemesis.UnderClock(node.Cmd)
	c := faultCluster(t, node, idleClient("c1"))
	ttl := 2 * time.Second
	clock := &nemesis.Clock{Cluster: c, TTL: ttl, Topology: nemesis.Topology{Service: []string{"redis"}, WallClock: true}}
	// A lock held for 10 s: far longer than the test takes, unless the
	// node's clock jumps.
	if out, err := redis(c, "c1", "redis", "set", "lock", "c1", "px", "10000"); err != nil || out != "OK" {
		t.Fatalf("set: %q %v", out, err)
	}
	ctx := context.Background()
	// This seed draws a bump: a strobe would swing the clock back while
	// the test looks.
	inj, err := clock.Inject(ctx, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(inj.Shape, "bump") {
		t.Fatalf("shape %q, want a bump", inj.Shape)
	}
	// Jumped by 2×TTL = 4 s: not yet past 10 s. A second jump shows the
	// shim adds what the file says.
	if _, err := c.Exec(ctx, "redis", "lockbench", "clock-offset", nemesis.ClockFile, "20000000000"); err != nil {
		t.Fatal(err)
	}
	if out, _ := redis(c, "c1", "redis", "exists", "lock"); out != "0" {
		t.Fatalf("a +20 s jump left the 10 s lock in place (exists = %q)", out)
	}
	if out, _ := redis(c, "c1", "redis", "set", "lock", "c2", "nx", "px", "10000"); out != "OK" {
		t.Fatalf("a second client could not take the expired lock: %q", out)
	}
	if err := clock.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if off, err := c.Exec(ctx, "redis", "od", "-An", "-tx8", nemesis.ClockFile); err != nil || strings.Trim(off, " 0\n") != "" {
		t.Fatalf("offset left after heal: %q %v", off, err)
	}
	// A key set with the clock back on time lives its full TTL again.
	if out, _ := redis(c, "c1", "redis", "set", "probe", "x", "px", "10000"); out != "OK" {
		t.Fatalf("set after heal: %q", out)
	}
	if out, _ := redis(c, "c1", "redis", "pttl", "probe"); len(out) != 4 || !strings.HasPrefix(out, "9") {
		t.Fatalf("after heal a 10 s key has %q ms left, want about 10000", out)
	}
}

func TestFaultFailoverPromotesReplica(t *testing.T) {
	nodes := []clusters.Node{redisNode("r1"), redisNode("r2", "--replicaof", "r1", "6379"), redisNode("r3", "--replicaof", "r1", "6379")}
	for _, s := range []string{"s1", "s2", "s3"} {
		conf := strings.Join([]string{"port 26379", "sentinel resolve-hostnames yes", "sentinel announce-hostnames yes",
			"sentinel announce-ip " + s, "sentinel monitor m r1 6379 2", "sentinel down-after-milliseconds m 1000",
			"sentinel failover-timeout m 5000"}, "\n")
		nodes = append(nodes, clusters.Node{Name: s, Role: "sentinel", Caps: []string{"NET_ADMIN"}, Cmd: []string{"sh", "-c",
			"printf '%s\\n' \"$0\" > /etc/sentinel.conf && exec redis-server /etc/sentinel.conf --sentinel", conf}})
	}
	nodes = append(nodes, idleClient("c1"), idleClient("c2"))
	c := faultCluster(t, nodes...)
	primary := func(from string) string {
		out, _ := c.Exec(context.Background(), from, "timeout", "2", "redis-cli", "-h", from, "-p", "26379", "sentinel", "get-master-addr-by-name", "m")
		first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
		return first
	}
	// Each Sentinel must know both replicas (from the primary's INFO, every
	// 10 s), or it has nobody to promote.
	knowsReplicas := func(s string) bool {
		out, _ := c.Exec(context.Background(), s, "redis-cli", "-p", "26379", "sentinel", "master", "m")
		return primary(s) == "r1" && strings.Contains(out, "num-slaves\n2\n") && strings.Contains(out, "num-other-sentinels\n2\n")
	}
	eventually(t, "the Sentinels agree on r1 and know its replicas", 40*time.Second, func() bool {
		return knowsReplicas("s1") && knowsReplicas("s2") && knowsReplicas("s3")
	})
	p := &nemesis.Partition{Cluster: c, Failover: true, Topology: nemesis.Topology{
		Service: []string{"r1", "r2", "r3"}, Sentinels: []string{"s1", "s2", "s3"}, Clients: []string{"c1", "c2"}, WallClock: true,
		Leader: func(context.Context) (string, error) { return primary("s1"), nil },
	}}
	ctx := context.Background()
	inj, err := p.Inject(ctx, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover: %v", inj.Targets)
	var promoted string
	eventually(t, "Sentinel promotes a replica", 30*time.Second, func() bool {
		for _, s := range []string{"s1", "s2", "s3"} {
			if p := primary(s); p == "r2" || p == "r3" {
				promoted = p
				return true
			}
		}
		return false
	})
	if err := p.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the old primary rejoins as a replica of "+promoted, 30*time.Second, func() bool {
		out, err := c.Exec(ctx, "r1", "redis-cli", "info", "replication")
		return err == nil && strings.Contains(out, "role:slave") && strings.Contains(out, "master_host:"+promoted)
	})
}

// Whole runs under the service-side faults that break an unfenced lock: a
// clock jump or a restart without persistence on Redis, and a Sentinel
// failover. The clock jump and the failover let a second client take a
// lock whose lease is still certainly valid, and the exclusion checker says
// so whatever the fence: the failover run fences every request and is
// invalid all the same. A restart may land between holdings and only
// forget the token counter, which the fence checker finds.
func TestFaultRunsFindTwoHolders(t *testing.T) {
	for _, c := range []struct {
		args []string
		// exclusion: the run must break exclusion; fence: the fence checker
		// must find the two holders.
		exclusion, fence bool
	}{
		{[]string{"--backend", "redis", "--nemesis", "clock", "--fence", "none"}, true, true},
		{[]string{"--backend", "redis", "--nemesis", "kill", "--redis-persistence", "none", "--fence", "none"}, false, true},
		{[]string{"--backend", "redis-sentinel", "--nemesis", "failover", "--fence", "all"}, true, false},
	} {
		t.Run(strings.Join(c.args[1:], "-"), func(t *testing.T) {
			side(t)
			r := mustCatch(t, nil, 41, append([]string{"run", "--time-limit", "25s"}, c.args...)...)
			if r.exit != 1 {
				t.Fatalf("exit %d, want 1 (invalid)", r.exit)
			}
			rep := readReport(t, r.dir)
			if c.exclusion {
				ex := checker(t, rep, "exclusion")
				if ex.Valid != checkers.Invalid || len(ex.Anomalies) == 0 || len(ex.Anomalies[0].Clients) != 2 {
					t.Fatalf("exclusion: %s %+v: want the two holders named", ex.Valid, ex.Anomalies)
				}
				if a := ex.Anomalies[0]; !strings.Contains(a.Message, "certainly valid until") || a.Clients[0] == a.Clients[1] {
					t.Errorf("two-holders anomaly: %+v", a)
				}
				if !strings.Contains(r.stdout, "two-holders") {
					t.Error("the printed verdict does not name the two holders")
				}
				page, err := os.ReadFile(filepath.Join(r.dir, "report.html"))
				if err != nil || !strings.Contains(string(page), "two-holders-window") {
					t.Errorf("report.html draws no two-holders window (%v)", err)
				}
			}
			if c.fence {
				fence := checker(t, rep, "fence")
				if fence.Valid != "invalid" || len(fence.Anomalies) == 0 || len(fence.Anomalies[0].Clients) < 2 {
					t.Fatalf("fence: %s %+v: want the two holders named", fence.Valid, fence.Anomalies)
				}
			}
		})
	}
}

// A fault that cannot put a holder past its lease (a pause far shorter
// than the TTL, which renewals outlast) leaves a valid run that says it
// is weak evidence.
func TestFaultThatReachesNoHolderIsWeakEvidence(t *testing.T) {
	r := lockbench(t, nil, "run", "--backend", "redis", "--nemesis", "pause", "--fault-duration", "200ms",
		"--nemesis-interval", "1s", "--time-limit", "8s", "--seed", "5")
	defer assertNothingLeft(t, r.runID)
	if r.exit != 0 {
		t.Fatalf("exit %d, want 0 (valid)", r.exit)
	}
	rep := readReport(t, r.dir)
	if rep.Evidence != checkers.WeakEvidence {
		t.Errorf("evidence %q, want %q", rep.Evidence, checkers.WeakEvidence)
	}
	if !strings.Contains(r.stdout, "verdict: "+checkers.WeakEvidence) {
		t.Errorf("the printed verdict does not say it is weak:\n%s", r.stdout)
	}
	ex := checker(t, rep, "exclusion")
	if ex.Counts["faults"] == 0 || ex.Counts["faults_effective"] != 0 || len(ex.Faults) == 0 {
		t.Fatalf("exclusion counts %v, faults %+v: want faults that opened no window", ex.Counts, ex.Faults)
	}
	for _, f := range ex.Faults {
		if f.StaleWindows != 0 || f.StaleWrites != 0 {
			t.Errorf("fault %+v opened a window", f)
		}
	}
}
