package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/history"
)

func validConfig() config.Config {
	return config.Config{
		Backend: "redis", Workload: "counter", Nemesis: []string{"pause"}, Fence: "none",
		TTL: config.Duration(2 * time.Second), TimeLimit: config.Duration(30 * time.Second), Concurrency: 5,
		NemesisInterval: config.Duration(5 * time.Second), FaultDuration: config.Duration(4 * time.Second),
		Work: "uniform:0-200ms", OpTimeout: config.Duration(time.Second), CheckTimeout: config.Duration(time.Minute),
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		mutate func(*config.Config)
		want   string
	}{
		"unknown backend":       {func(c *config.Config) { c.Backend = "zk" }, "unknown backend"},
		"unknown workload":      {func(c *config.Config) { c.Workload = "bank" }, "unknown workload"},
		"unknown nemesis":       {func(c *config.Config) { c.Nemesis = []string{"meteor"} }, "unknown nemesis"},
		"none and pause":        {func(c *config.Config) { c.Nemesis = []string{"none", "pause"} }, "cannot be combined"},
		"bad fence":             {func(c *config.Config) { c.Fence = "some" }, "fence"},
		"negative ttl":          {func(c *config.Config) { c.TTL = config.Duration(-2 * time.Second) }, "--ttl"},
		"tiny ttl":              {func(c *config.Config) { c.TTL = config.Duration(time.Millisecond) }, "--ttl"},
		"zero time limit":       {func(c *config.Config) { c.TimeLimit = 0 }, "--time-limit"},
		"no clients":            {func(c *config.Config) { c.Concurrency = 0 }, "--concurrency"},
		"too many clients":      {func(c *config.Config) { c.Concurrency = 1000 }, "--concurrency"},
		"zero interval":         {func(c *config.Config) { c.NemesisInterval = 0 }, "--nemesis-interval"},
		"zero fault":            {func(c *config.Config) { c.FaultDuration = 0 }, "--fault-duration"},
		"negative work":         {func(c *config.Config) { c.Work = "fixed:-1s" }, "--work"},
		"bad work":              {func(c *config.Config) { c.Work = "tail:0-200ms,1/1,3s" }, "1/N"},
		"unknown variant":       {func(c *config.Config) { c.Variant = "shared-key" }, "no client variant"},
		"variant elsewhere":     {func(c *config.Config) { c.Backend, c.Variant = "etcd", "setnx-expire" }, "no client variant"},
		"lockless failpoint":    {func(c *config.Config) { c.Backend, c.Failpoint = "nolock", "section" }, "pass no failpoint"},
		"unknown failpoint":     {func(c *config.Config) { c.Failpoint = "after-everything" }, "no failpoint"},
		"failpoint unused":      {func(c *config.Config) { c.Nemesis, c.Failpoint = []string{"kill"}, "acquired" }, "needs a fault"},
		"bad on-lock-error":     {func(c *config.Config) { c.OnLockError = "ajar" }, "--on-lock-error"},
		"slow-release, no lock": {func(c *config.Config) { c.Backend, c.Nemesis = "cas", []string{"slow-release"} }, "no release to delay"},
		"zero op timeout":       {func(c *config.Config) { c.OpTimeout = 0 }, "--op-timeout"},
		"zero check budget":     {func(c *config.Config) { c.CheckTimeout = 0 }, "--check-timeout"},
		"fault twice":           {func(c *config.Config) { c.Nemesis = []string{"pause", "kill", "pause"} }, "pause is asked for twice"},
		"partition on cas":      {func(c *config.Config) { c.Backend, c.Nemesis = "cas", []string{"partition"} }, "no lock-service nodes"},
		"kill on nolock":        {func(c *config.Config) { c.Backend, c.Nemesis = "nolock", []string{"kill"} }, "no lock-service nodes"},
		"clock on etcd":         {func(c *config.Config) { c.Backend, c.Nemesis = "etcd", []string{"clock"} }, "vDSO"},
		"ttl past limit":        {func(c *config.Config) { c.TimeLimit = config.Duration(2 * time.Second) }, "shorter than --time-limit"},
		"fault past limit":      {func(c *config.Config) { c.TimeLimit = config.Duration(4 * time.Second) }, "--fault-duration 4s must be shorter"},
		"link shape, no link":   {func(c *config.Config) { c.Link = []string{"delay"} }, "add --nemesis link"},
		"link path, no link":    {func(c *config.Config) { c.LinkPath = "store" }, "add --nemesis link"},
		"unknown link shape":    {func(c *config.Config) { c.Nemesis, c.Link = []string{"link"}, []string{"jam"} }, "unknown link shape"},
		"link shape twice":      {func(c *config.Config) { c.Nemesis, c.Link = []string{"link"}, []string{"reset", "reset"} }, "reset is asked for twice"},
		"unknown link path":     {func(c *config.Config) { c.Nemesis, c.LinkPath = []string{"link"}, "sideways" }, "unknown link path"},
		"store path, kept": {func(c *config.Config) {
			c.Backend, c.Store, c.Nemesis, c.LinkPath = "etcd", "etcd", []string{"link"}, "store"
		}, "keeps the counter"},
		"node target, pause": {func(c *config.Config) { c.PauseTarget = "leader" }, "pause takes holder, random, all"},
		"target, no taker":   {func(c *config.Config) { c.Nemesis, c.PauseTarget = []string{"partition"}, "all" }, "no fault of this run takes a target"},
		"leaderless leader": {func(c *config.Config) {
			c.Backend, c.Nodes, c.Nemesis, c.PauseTarget = "redlock", 5, []string{"kill"}, "leader"
		}, "redlock has no leader"},
		"unknown target": {func(c *config.Config) { c.PauseTarget = "everyone" }, "unknown --target"},
		"negative rtt":   {func(c *config.Config) { c.RTT = config.Duration(-time.Second) }, "--rtt"},
	}
	for name, c := range cases {
		cfg := validConfig()
		c.mutate(&cfg)
		err := Validate(&cfg)
		if !errors.Is(err, config.ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a usage error mentioning %q", name, err, c.want)
		}
	}
	cfg := validConfig()
	if err := Validate(&cfg); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	if w := Warnings(&cfg); len(w) != 0 {
		t.Errorf("warnings for a sound configuration: %q", w)
	}
	mutant := validConfig()
	mutant.Variant, mutant.Nemesis, mutant.Failpoint = "setnx-expire", []string{"kill-client"}, "acquired"
	if err := Validate(&mutant); err != nil {
		t.Errorf("a variant struck at its failpoint refused: %v", err)
	}
	// test.json of a run from before --work: its --work-max is uniform:0-MAX.
	old := validConfig()
	old.Work, old.WorkMax = "", config.Duration(2*time.Second)
	if err := Validate(&old); err != nil || old.Work != "uniform:0-2s" || old.WorkMax != 0 || old.Variant != config.Correct {
		t.Errorf("an old configuration: %v, work %q, work_max %s, variant %q", err, old.Work, old.WorkMax.D(), old.Variant)
	}
	// Without faults, a fault duration as long as the run is irrelevant.
	calm := validConfig()
	calm.Nemesis, calm.TimeLimit = []string{"none"}, config.Duration(3*time.Second)
	if err := Validate(&calm); err != nil {
		t.Errorf("a short run without faults refused: %v", err)
	}
	weak := validConfig()
	weak.FaultDuration, weak.NemesisInterval = config.Duration(time.Second), config.Duration(time.Minute)
	if w := Warnings(&weak); len(w) != 2 || !strings.Contains(w[0], "--nemesis-interval") || !strings.Contains(w[1], "less than the 2s TTL") {
		t.Errorf("warnings %q", w)
	}
	if got := cfg.TestName(); got != "redis-counter-pause-fence-none" {
		t.Errorf("TestName = %q", got)
	}
}

func TestHoldersFollowEvents(t *testing.T) {
	h := newHolders(false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	got := make(chan string, 1)
	go func() {
		name, _ := h.WaitHolder(ctx)
		got <- name
	}()
	h.observe(history.Event{Process: "c2", Type: history.Invoke, F: history.Acquire})
	h.observe(history.Event{Process: "c2", Type: history.OK, F: history.Acquire, Token: 4})
	if name := <-got; name != "c2" {
		t.Fatalf("holder %q, want c2", name)
	}
	h.observe(history.Event{Process: "c2", Type: history.Invoke, F: history.Release})
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if name, err := h.WaitHolder(short); err == nil {
		t.Fatalf("%s still holds after starting its release", name)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Only the faults that set firewall rules give the run's containers
// NET_ADMIN: a link fault only when it may make a link lossy.
func TestCapsFollowFaults(t *testing.T) {
	for _, c := range []struct {
		nemesis []string
		link    []string
		want    bool
	}{
		{[]string{"pause"}, nil, false},
		{[]string{"partition"}, nil, true},
		{[]string{"link"}, []string{"delay", "reply-lost", "reset", "slow-close"}, false},
		{[]string{"link"}, []string{"delay", "loss"}, true},
		{[]string{"pause", "link"}, []string{"loss"}, true},
	} {
		r := &run{cfg: config.Config{Nemesis: c.nemesis, Link: c.link}}
		if got := r.caps() != nil; got != c.want {
			t.Errorf("%v with --link %v: NET_ADMIN %v, want %v", c.nemesis, c.link, got, c.want)
		}
	}
}
