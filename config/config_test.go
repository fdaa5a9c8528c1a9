package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestConfigRoundTrip(t *testing.T) {
	cfg := Config{TTL: Duration(2 * time.Second), CheckTimeout: Duration(time.Minute)}
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

// pause+partition is pause,partition: `run` takes a matrix cell's faults
// as the cell names them.
func TestCombinedFaultsSplit(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
		ok   bool
	}{
		{[]string{"pause+partition"}, "pause,partition", true},
		{[]string{"pause+partition", "kill"}, "pause,partition,kill", true},
		{[]string{"pause+pause"}, "", false},
		{[]string{"none+pause"}, "", false},
	} {
		cfg := Config{Workload: Workloads[0], Nemesis: c.in, Fence: "none", TTL: Duration(time.Second), OpTimeout: Duration(time.Second),
			TimeLimit: Duration(10 * time.Second), Concurrency: 2, NemesisInterval: Duration(time.Second), FaultDuration: Duration(time.Second),
			CheckTimeout: Duration(time.Second), Nodes: 5}
		err := cfg.Check()
		if (err == nil) != c.ok || (c.ok && strings.Join(cfg.Nemesis, ",") != c.want) {
			t.Errorf("%v: %v, %v; want %q (ok %v)", c.in, cfg.Nemesis, err, c.want, c.ok)
		}
	}
}
