package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockbench/lockbench/history"
)

func validConfig() Config {
	return Config{
		Backend: "redis", Workload: "counter", Nemesis: []string{"pause"}, Fence: "none",
		TTL: Duration(2 * time.Second), TimeLimit: Duration(30 * time.Second), Concurrency: 5,
		NemesisInterval: Duration(5 * time.Second), FaultDuration: Duration(4 * time.Second),
		WorkMax: Duration(200 * time.Millisecond), OpTimeout: Duration(time.Second), CheckTimeout: Duration(time.Minute),
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"unknown backend":   {func(c *Config) { c.Backend = "zk" }, "unknown backend"},
		"unknown workload":  {func(c *Config) { c.Workload = "bank" }, "unknown workload"},
		"unknown nemesis":   {func(c *Config) { c.Nemesis = []string{"meteor"} }, "unknown nemesis"},
		"none and pause":    {func(c *Config) { c.Nemesis = []string{"none", "pause"} }, "cannot be combined"},
		"bad fence":         {func(c *Config) { c.Fence = "some" }, "fence"},
		"negative ttl":      {func(c *Config) { c.TTL = Duration(-2 * time.Second) }, "--ttl"},
		"tiny ttl":          {func(c *Config) { c.TTL = Duration(time.Millisecond) }, "--ttl"},
		"zero time limit":   {func(c *Config) { c.TimeLimit = 0 }, "--time-limit"},
		"no clients":        {func(c *Config) { c.Concurrency = 0 }, "--concurrency"},
		"too many clients":  {func(c *Config) { c.Concurrency = 1000 }, "--concurrency"},
		"zero interval":     {func(c *Config) { c.NemesisInterval = 0 }, "--nemesis-interval"},
		"zero fault":        {func(c *Config) { c.FaultDuration = 0 }, "--fault-duration"},
		"negative work":     {func(c *Config) { c.WorkMax = Duration(-1) }, "--work-max"},
		"zero op timeout":   {func(c *Config) { c.OpTimeout = 0 }, "--op-timeout"},
		"zero check budget": {func(c *Config) { c.CheckTimeout = 0 }, "--check-timeout"},
		"fault twice":       {func(c *Config) { c.Nemesis = []string{"pause", "kill", "pause"} }, "pause is asked for twice"},
		"partition on cas":  {func(c *Config) { c.Backend, c.Nemesis = "cas", []string{"partition"} }, "no lock-service nodes"},
		"kill on nolock":    {func(c *Config) { c.Backend, c.Nemesis = "nolock", []string{"kill"} }, "no lock-service nodes"},
		"clock on etcd":     {func(c *Config) { c.Backend, c.Nemesis = "etcd", []string{"clock"} }, "vDSO"},
		"ttl past limit":    {func(c *Config) { c.TimeLimit = Duration(2 * time.Second) }, "shorter than --time-limit"},
		"fault past limit":  {func(c *Config) { c.TimeLimit = Duration(4 * time.Second) }, "--fault-duration 4s must be shorter"},
	}
	for name, c := range cases {
		cfg := validConfig()
		c.mutate(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a usage error mentioning %q", name, err, c.want)
		}
	}
	cfg := validConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	if w := cfg.Warnings(); len(w) != 0 {
		t.Errorf("warnings for a sound configuration: %q", w)
	}
	// Without faults, a fault duration as long as the run is irrelevant.
	calm := validConfig()
	calm.Nemesis, calm.TimeLimit = []string{"none"}, Duration(3*time.Second)
	if err := calm.Validate(); err != nil {
		t.Errorf("a short run without faults refused: %v", err)
	}
	weak := validConfig()
	weak.FaultDuration, weak.NemesisInterval = Duration(time.Second), Duration(time.Minute)
	if w := weak.Warnings(); len(w) != 2 || !strings.Contains(w[0], "--nemesis-interval") || !strings.Contains(w[1], "less than the 2s TTL") {
		t.Errorf("warnings %q", w)
	}
	if got := cfg.TestName(); got != "redis-counter-pause-fence-none" {
		t.Errorf("TestName = %q", got)
	}
}

func TestConfigRoundTrip(t *testing.T) {
	cfg := validConfig()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"ttl":"2s"`) {
		t.Errorf("durations should read as on the command line: %s", data)
	}
	var back Config
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.TTL != cfg.TTL || back.CheckTimeout != cfg.CheckTimeout {
		t.Errorf("round trip changed durations: %+v", back)
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
