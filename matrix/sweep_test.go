package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/store"
)

// sweepBase is a base configuration at the run flags' defaults, which
// cells name themselves against.
var sweepBase = config.Config{TTL: config.Duration(config.DefaultTTL), TimeLimit: config.Duration(20 * time.Second),
	Concurrency: config.DefaultConcurrency, NemesisInterval: config.Duration(5 * time.Second),
	FaultDuration: config.Duration(2 * config.DefaultTTL), OpTimeout: config.Duration(time.Second),
	CheckTimeout: config.Duration(time.Minute), Nodes: 5, Work: config.DefaultWork, Variant: config.Correct,
	OnLockError: config.FailClosed}

func builtIn(t *testing.T) *Expectations {
	t.Helper()
	exp, err := LoadExpectations("")
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

// Every cell of the full grid crossed with sweeps of every axis, aimed
// twins included, has a name of its own, left-out cells too: the name is
// what a cell's results and seeds are known by.
func TestSweepNamesAreUnique(t *testing.T) {
	a := Axes{Backends: backends.Names(), Workloads: config.Workloads,
		Nemeses: []string{"none", "pause", "kill-client", "slow-release", "reply-lost", "pause-node", "kill", "power-loss", "clock", "partition", "failover", "link"},
		Fences:  []string{"none", "writes", "all"}, Stores: []string{"lockbench", "etcd", "postgres"},
		TTLs: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second}, Concurrencies: []int{1, 5, 20},
		RTTs: []time.Duration{0, 20 * time.Millisecond, 80 * time.Millisecond}, OnLockErrors: config.LockErrors,
		CheckLeases: CheckLeases, Works: []string{config.DefaultWork, "tail:0-100ms,1/4,1500ms"}}
	if testing.Short() {
		a.TTLs, a.Concurrencies, a.RTTs = a.TTLs[:2], a.Concurrencies[:2], a.RTTs[:2]
	}
	cells, skipped := Grid(a, sweepBase, builtIn(t))
	seen := map[string]bool{}
	twins := 0
	for _, c := range append(cells, func() []Cell {
		var out []Cell
		for _, s := range skipped {
			out = append(out, s.Cell)
		}
		return out
	}()...) {
		n := c.Name()
		if seen[n] {
			t.Fatalf("two cells are named %s", n)
		}
		seen[n] = true
		if c.Aimed != nil {
			twins++
		}
	}
	if len(cells) < 1000 || twins == 0 {
		t.Errorf("%d cells, %d aimed twins: the sweep is not the full grid", len(cells), twins)
	}
}

// A cell at every flag's default keeps the name it had before the sweep
// axes, whether the grid or a literal made it; one off a default says so
// in a fixed order.
func TestSweepNames(t *testing.T) {
	cells, skipped := Grid(Axes{Backends: []string{"redis", "etcd"}, Workloads: config.Workloads, Nemeses: []string{"none", "pause"},
		Fences: []string{"none", "all"}, Stores: []string{"lockbench", "etcd"}}, sweepBase, builtIn(t))
	names := map[string]bool{}
	for _, c := range cells {
		names[c.Name()] = true
	}
	for _, s := range skipped {
		names[s.Cell.Name()] = true
	}
	for _, want := range []string{"redis/counter/none/fence-none", "redis/set/pause/fence-all", "etcd/counter/pause/store-etcd", "etcd/set/none/fence-all"} {
		if !names[want] {
			t.Errorf("no cell %s among %v", want, names)
		}
	}
	if n := (Cell{Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "lockbench"}).Name(); n != "redis/counter/pause/fence-none" {
		t.Errorf("literal cell named %s", n)
	}
	c := Cell{Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "lockbench",
		TTL: config.Duration(500 * time.Millisecond), Concurrency: 20, RTT: "20ms", Variant: "del-release", OnLockError: config.FailOpen,
		CheckLease: CheckLeaseOn, Work: "fixed:3s"}
	if n, want := c.Name(), "redis/counter/pause/fence-none/ttl-500ms/clients-20/rtt-20ms/variant-del-release/fail-open/check-lease-on/work-fixed:3s"; n != want {
		t.Errorf("swept cell named %s, want %s", n, want)
	}
	// Written another way, a default is still the default.
	c = Cell{Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "lockbench",
		TTL: config.Duration(2000 * time.Millisecond), RTT: "0s", Work: "uniform:0s-200ms", CheckLease: CheckLeaseOff}
	if n := c.Name(); n != "redis/counter/pause/fence-none" {
		t.Errorf("cell at the defaults named %s", n)
	}
	// The base's value is named against the flag's default, not the base.
	base := sweepBase
	base.TTL = config.Duration(time.Second)
	cells, _ = Grid(Axes{Backends: []string{"redis"}, Workloads: []string{"counter"}, Nemeses: []string{"pause"}, Fences: []string{"none"},
		Stores: []string{"lockbench"}}, base, nil)
	if len(cells) != 1 || cells[0].Name() != "redis/counter/pause/fence-none/ttl-1s" {
		t.Errorf("cells %v at --ttl 1s", cells)
	}
}

func writeExpectations(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "expectations.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Rules on the sweep axes: durations by value, check_lease by its value
// alone, each unset key matching anything.
func TestRuleSweepKeys(t *testing.T) {
	exp, err := LoadExpectations(writeExpectations(t, `rules:
  - expect: valid
    reason: default
  - nemesis: pause
    ttl: 500ms
    expect: invalid
    reason: short lease
  - nemesis: pause
    check_lease: true
    work: fixed:1s
    expect: either
    reason: checked lease
`))
	if err != nil {
		t.Fatal(err)
	}
	cell := func(ttl time.Duration, checkLease, work string) Cell {
		return Cell{Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "lockbench",
			TTL: config.Duration(ttl), CheckLease: checkLease, Work: work}
	}
	for _, c := range []struct {
		cell Cell
		want string
	}{
		{cell(500*time.Millisecond, "", ""), ExpectInvalid},
		{cell(time.Duration(0.5*float64(time.Second)), CheckLeaseOff, ""), ExpectInvalid},
		{cell(5*time.Second, "", ""), ExpectValid},
		{cell(0, "", ""), ExpectValid},
		{cell(5*time.Second, CheckLeaseOn, "fixed:1000ms"), ExpectEither},
		{cell(5*time.Second, CheckLeaseOff, "fixed:1s"), ExpectValid},
		{cell(5*time.Second, CheckLeaseOn, "fixed:2s"), ExpectValid},
	} {
		if got, _ := exp.For(c.cell); got != c.want {
			t.Errorf("%s: %s, want %s", c.cell.Name(), got, c.want)
		}
	}
	// ForRun reads the same keys from a run's configuration.
	cfg := sweepBase
	cfg.Backend, cfg.Workload, cfg.Nemesis, cfg.Fence, cfg.Store = "redis", "counter", []string{"pause"}, store.FenceNone, config.DefaultStore
	cfg.TTL = config.Duration(500 * time.Millisecond)
	if got := exp.ForRun(cfg); got != ExpectInvalid {
		t.Errorf("ForRun at --ttl 500ms: %s", got)
	}
	cfg.TTL, cfg.CheckLease, cfg.Work = config.Duration(5*time.Second), true, "fixed:1s"
	if got := exp.ForRun(cfg); got != ExpectEither {
		t.Errorf("ForRun with --check-lease: %s", got)
	}
	for name, body := range map[string]string{
		"bad ttl":          "rules:\n  - ttl: soon\n    expect: valid\n    reason: x\n",
		"bad rtt":          "rules:\n  - rtt: 20\n    expect: valid\n    reason: x\n",
		"unknown variant":  "rules:\n  - variant: nope\n    expect: valid\n    reason: x\n",
		"bad lock error":   "rules:\n  - on_lock_error: ajar\n    expect: valid\n    reason: x\n",
		"bad work":         "rules:\n  - work: fixed\n    expect: valid\n    reason: x\n",
		"aimed no nemesis": "rules:\n  - expect: valid\n    reason: x\naimed:\n  - label: a\n    expect: either\n    reason: x\n",
		"aimed no label":   "rules:\n  - expect: valid\n    reason: x\naimed:\n  - nemesis: pause\n    expect: either\n    reason: x\n",
		"aimed slash":      "rules:\n  - expect: valid\n    reason: x\naimed:\n  - nemesis: pause\n    label: a/b\n    expect: either\n    reason: x\n",
		"aimed twice":      "rules:\n  - expect: valid\n    reason: x\naimed:\n  - nemesis: pause\n    label: a\n    expect: either\n    reason: x\n  - nemesis: pause\n    label: a\n    expect: either\n    reason: y\n",
		"aimed target":     "rules:\n  - expect: valid\n    reason: x\naimed:\n  - nemesis: pause\n    label: a\n    target: boss\n    expect: either\n    reason: x\n",
		"aimed failpoint":  "rules:\n  - expect: valid\n    reason: x\naimed:\n  - nemesis: pause\n    label: a\n    failpoint: lunch\n    expect: either\n    reason: x\n",
		"aimed no reason":  "rules:\n  - expect: valid\n    reason: x\naimed:\n  - nemesis: pause\n    label: a\n    expect: either\n",
	} {
		if _, err := LoadExpectations(writeExpectations(t, body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A TTL a backend cannot keep leaves its cells out for the backend's
// reason; the others run it, their faults lasting two of the cell's TTLs
// unless --fault-duration fixed them.
func TestSweepLeavesOutRefusedTTLs(t *testing.T) {
	a := Axes{Backends: []string{"redis", "etcd", "postgres"}, Workloads: []string{"counter"}, Nemeses: []string{"pause"},
		Fences: []string{"none"}, Stores: []string{"lockbench"}, TTLs: []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second}}
	cells, skipped := Grid(a, sweepBase, nil)
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[s.Cell.Name()] = s.Reason
	}
	for name, want := range map[string]string{
		"etcd/counter/pause/fence-none/ttl-500ms":     "etcd leases count whole seconds",
		"etcd/counter/pause/fence-none/ttl-1.5s":      "etcd leases count whole seconds",
		"postgres/counter/pause/fence-none/ttl-500ms": "PostgreSQL's keepalive settings count whole seconds",
		"postgres/counter/pause/fence-none/ttl-1.5s":  "PostgreSQL's keepalive settings count whole seconds",
		"redis/counter/pause/fence-none/ttl-500ms":    "",
		"etcd/counter/pause/fence-none/ttl-3s":        "",
		"postgres/counter/pause/fence-none/ttl-3s":    "",
	} {
		r, ok := reasons[name]
		if want == "" && ok {
			t.Errorf("%s left out: %s", name, r)
		}
		if want != "" && !strings.Contains(r, want) {
			t.Errorf("%s: reason %q, want %q", name, r, want)
		}
	}
	if len(cells)+len(skipped) != 9 {
		t.Errorf("%d cells and %d left out, want 9 in all", len(cells), len(skipped))
	}
	if cfg := cells[0].config(sweepBase); cfg.TTL.D() != 500*time.Millisecond || cfg.FaultDuration.D() != time.Second {
		t.Errorf("%s runs TTL %s, faults of %s; want 500ms and 1s", cells[0].Name(), cfg.TTL.D(), cfg.FaultDuration.D())
	}
	a.FixedFaultDuration = true
	cells, _ = Grid(a, sweepBase, nil)
	if cfg := cells[0].config(sweepBase); cfg.FaultDuration != sweepBase.FaultDuration {
		t.Errorf("with --fault-duration, faults of %s", cfg.FaultDuration.D())
	}
}

// An aimed twin follows each cell left to chance that its entry matches,
// runs with the entry's overrides and expects what the entry does; a
// cell the rules decide has none, nor has the default CI grid; a twin its
// backend refuses is left out for the reason.
func TestAimedTwins(t *testing.T) {
	exp := builtIn(t)
	a := Axes{Backends: []string{"redis", "etcd", "cas"}, Workloads: []string{"counter"}, Nemeses: []string{"none", "pause"},
		Fences: []string{"none", "all"}, Stores: []string{"lockbench"}}
	plain, _ := Grid(a, sweepBase, nil)
	aimed, _ := Grid(a, sweepBase, exp)
	if len(aimed) != len(plain) {
		t.Errorf("the CI grid gained %d aimed cells", len(aimed)-len(plain))
	}
	a.Fences = []string{"writes"}
	a.Nemeses = []string{"pause"}
	cells, _ := Grid(a, sweepBase, exp)
	var names []string
	for _, c := range cells {
		names = append(names, c.Name())
	}
	want := []string{"redis/counter/pause/fence-writes", "redis/counter/pause/fence-writes/aimed-holder-section",
		"etcd/counter/pause/fence-writes", "etcd/counter/pause/fence-writes/aimed-holder-section"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("cells %v, want %v", names, want)
	}
	twin := cells[1]
	cfg := twin.config(sweepBase)
	if cfg.Failpoint != "section" || cfg.PauseTarget != "holder" || cfg.Work != twin.Aimed.Work || cfg.Fence != store.FenceWrites {
		t.Errorf("the twin runs %+v", cfg)
	}
	if x, why := exp.For(twin); x != twin.Aimed.Expect || why != twin.Aimed.Reason {
		t.Errorf("the twin expects %s (%s)", x, why)
	}
	// Postgres takes no failpoint of its lock client, but every client that
	// locks passes the workload's; a failpoint only some backends have
	// leaves the others' twins out.
	custom := &Expectations{Rules: []Rule{{Expect: ExpectEither, Reason: "chance"}},
		Aimed: []Aimed{{Nemesis: "pause", Failpoint: "acquired", TTL: "3s", Label: "acquired", Expect: ExpectEither, Reason: "aimed"}}}
	a.Backends, a.Fences = []string{"redis", "postgres"}, []string{"none"}
	cells, skipped := Grid(a, sweepBase, custom)
	if len(cells) != 3 || cells[1].Name() != "redis/counter/pause/fence-none/aimed-acquired" || len(skipped) != 1 ||
		!strings.Contains(skipped[0].Reason, "no failpoint") {
		t.Errorf("cells %v, left out %v", cells, skipped)
	}
	if cfg := cells[1].config(sweepBase); cfg.TTL.D() != 3*time.Second || cfg.FaultDuration.D() != 6*time.Second {
		t.Errorf("the twin at ttl 3s runs TTL %s, faults of %s", cfg.TTL.D(), cfg.FaultDuration.D())
	}
}
