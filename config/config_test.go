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
