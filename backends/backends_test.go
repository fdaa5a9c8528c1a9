package backends

import (
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/nemesis"
)

// The lease models are the ones the exclusion checker's golden histories
// are judged by (checkers/exclusion_test.go); a change here is a change of
// what a run's verdict means.
func TestLeaseModels(t *testing.T) {
	want := map[string]checkers.Lease{
		"redis":          {TTL: 2e9, SlackFixed: 1e6, SlackPPM: 500},
		"redis-sentinel": {TTL: 2e9, SlackFixed: 1e6, SlackPPM: 500},
		"redlock":        {TTL: 2e9, SlackFixed: 1e6, SlackPPM: 10_000},
		"etcd":           {TTL: 2e9, Session: true},
		"zookeeper":      {TTL: 2e9, SlackPPM: 500_000, Session: true, LossReleases: true},
		"postgres":       {TTL: 2e9, LastStatement: true},
	}
	for _, b := range All {
		got := b.Lease(2e9)
		if w, ok := want[b.Name()]; ok && got != w {
			t.Errorf("%s: lease %+v, want %+v", b.Name(), got, w)
		}
		if (got.None == "") != b.Locks() {
			t.Errorf("%s: lease %+v, but Locks() = %v", b.Name(), got, b.Locks())
		}
	}
}

func TestEveryFaultIsDecidedForEveryBackend(t *testing.T) {
	cfg := config.Config{Nodes: 5}
	for _, b := range All {
		if _, ok := Lookup(b.Name()); !ok {
			t.Errorf("%s is not found by its name", b.Name())
		}
		nodes := len(Topology(b.Layout(&cfg)).Service) > 0
		for _, f := range nemesis.Names() {
			why := Inapplicable(b, &cfg, f)
			if !nodes && f != "pause" && f != nemesis.LinkFault && why == "" {
				t.Errorf("%s without nodes: %s applies (%q)", b.Name(), f, why)
			}
		}
	}
	if why := Inapplicable(Etcd{}, &cfg, "clock"); !strings.Contains(why, "vDSO") {
		t.Errorf("clock on etcd: %q", why)
	}
	if why := Inapplicable(ZooKeeper{}, &cfg, "clock"); !strings.Contains(why, "JVM") {
		t.Errorf("clock on zookeeper: %q", why)
	}
	if why := Inapplicable(Postgres{}, &cfg, "clock"); !strings.Contains(why, "keepalive") {
		t.Errorf("clock on postgres: %q", why)
	}
	if why := Inapplicable(Redis{}, &cfg, "failover"); !strings.Contains(why, "Sentinel") {
		t.Errorf("failover on redis: %q", why)
	}
	for _, f := range nemesis.Names() {
		if why := Inapplicable(Sentinel{}, &cfg, f); why != "" && f != nemesis.ReplyLost {
			t.Errorf("%s on redis-sentinel: %q", f, why)
		}
	}
	// A fault that strikes at a point of its own applies where clients
	// pass it, and only there.
	for _, c := range []struct {
		b     Backend
		fault string
		want  bool
	}{{ZooKeeper{}, nemesis.ReplyLost, true}, {Redis{}, nemesis.ReplyLost, false}, {Etcd{}, nemesis.ReplyLost, false},
		{Redis{}, nemesis.SlowRelease, true}, {ZooKeeper{}, nemesis.SlowRelease, false}, {Postgres{}, nemesis.SlowRelease, false}} {
		why := Inapplicable(c.b, &cfg, c.fault)
		if (why == "") != c.want || (!c.want && !strings.Contains(why, "never reach failpoint")) {
			t.Errorf("%s on %s: %q, want applicable %v", c.fault, c.b.Name(), why, c.want)
		}
	}
}

func TestSpecRoundTrip(t *testing.T) {
	s := Spec{Process: "c1", Backend: "redis", LockAddrs: []string{"redis:6379"}, TTL: config.Duration(2e9), Seed: -3}
	data, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeSpec(data)
	if err != nil || back.Process != s.Process || back.TTL != s.TTL || back.Seed != s.Seed || back.LockAddrs[0] != "redis:6379" {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if _, err := DecodeSpec("--process c1"); err == nil {
		t.Error("flags taken for a spec")
	}
}

// The TTL maps to the server's detection of a dead peer: one second of
// silence before the first keepalive probe, one probe a second, dropped
// after TTL seconds in all; the idle timeouts are --pg-idle-timeout.
func TestPostgresTTLMapping(t *testing.T) {
	got := strings.Join(pgServerConfig(5e9, 1500e6), " ")
	for _, want := range []string{"tcp_keepalives_idle=1", "tcp_keepalives_interval=1", "tcp_keepalives_count=4",
		"tcp_user_timeout=5000", "idle_session_timeout=1500", "idle_in_transaction_session_timeout=1500"} {
		if !strings.Contains(got, want) {
			t.Errorf("server settings %q lack %q", got, want)
		}
	}
	for _, c := range []struct {
		cfg  config.Config
		fail string
	}{
		{config.Config{TTL: config.Duration(1e9), Store: "lockbench"}, "must be 2s, 3s"},
		{config.Config{TTL: config.Duration(2500e6), Store: "lockbench"}, "whole seconds"},
		{config.Config{TTL: config.Duration(2e9), Store: "postgres", PgLock: "session"}, "must be xact"},
		{config.Config{TTL: config.Duration(2e9), Store: "postgres", Fence: "all"}, "which is the fence"},
		{config.Config{TTL: config.Duration(3e9), Store: "lockbench", PgIdleTimeout: config.Duration(500e6)}, "between its checks"},
		{config.Config{TTL: config.Duration(2e9), Store: "lockbench", PgLock: "advisory"}, "unknown --pg-lock"},
		{config.Config{TTL: config.Duration(2e9), Store: "lockbench", PgLock: "xact", Variant: locks.PgbouncerSession}, "must be session"},
	} {
		err := Postgres{}.Check(&c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.fail) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.fail)
		}
	}
	for store, mode := range map[string]string{"lockbench": "session", "postgres": "xact"} {
		cfg := config.Config{TTL: config.Duration(2e9), Store: store, Fence: "none", Nodes: 5}
		if err := (Postgres{}).Check(&cfg); err != nil || cfg.PgLock != mode || cfg.Nodes != 0 {
			t.Errorf("store %s: %v, lock %q, nodes %d", store, err, cfg.PgLock, cfg.Nodes)
		}
	}
}

// ZooKeeper's members keep their data on the lockbench disk and fsync
// their log only in power-loss runs; elsewhere fsync would only time the
// overlay's disk.
func TestZooKeeperFsyncsForPowerLoss(t *testing.T) {
	for _, c := range []struct {
		nemesis []string
		want    string
	}{{[]string{"pause"}, "forceSync=no"}, {[]string{"pause", nemesis.PowerLossFault}, "forceSync=yes"}} {
		cfg := config.Config{TTL: config.Duration(time.Second), Nemesis: c.nemesis}
		l := ZooKeeper{}.Layout(&cfg)
		for _, s := range l.Services {
			if cmd := strings.Join(s.Node.Cmd, " "); !strings.Contains(cmd, c.want) || s.DataDir != zkDataDir {
				t.Errorf("%v: %s runs %q with data in %q, want %s in %s", c.nemesis, s.Node.Name, cmd, s.DataDir, c.want, zkDataDir)
			}
		}
		if len(Topology(l).Disks) != 3 {
			t.Errorf("%v: disks %v, want the three members", c.nemesis, Topology(l).Disks)
		}
	}
}
