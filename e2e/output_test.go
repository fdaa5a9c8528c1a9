package e2e

import (
	"context"
	"encoding/json"
	"github.com/lockbench/lockbench/rundir"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// One run proves --json and --leave-running together: stdout is one JSON
// document holding results.json as stored, everything for people is on
// stderr, the cluster's services are still up and unpaused after the run,
// `lockbench clean --run ID` (as the run said) removes them, and no empty
// log is left under logs/.
func TestJSONLeaveRunning(t *testing.T) {
	r := lockbench(t, nil, "run", "--backend", "redis", "--nemesis", "pause", "--fence", "all",
		"--time-limit", "8s", "--nemesis-interval", "2s", "--seed", "21", "--json", "--leave-running")
	if r.exit != 0 && r.exit != 1 && r.exit != 2 {
		t.Fatalf("exit %d", r.exit)
	}
	var printed map[string]any
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&printed); err != nil {
		t.Fatalf("stdout is not JSON: %v", err)
	}
	if dec.More() {
		t.Error("stdout holds more than one JSON document")
	}
	runID, _ := printed["run_id"].(string)
	dir, _ := printed["dir"].(string)
	if runID == "" || dir == "" {
		t.Fatalf("no run_id or dir in the summary")
	}
	var stored map[string]any
	data, err := os.ReadFile(filepath.Join(dir, rundir.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &stored); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"run_id", "dir", "files"} {
		delete(printed, k)
	}
	if !reflect.DeepEqual(printed, stored) {
		t.Errorf("the summary differs from results.json:\n%v\n%v", printed, stored)
	}
	for _, want := range []string{"run " + runID, "verdict:", "lockbench clean --run " + runID} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}

	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "lockbench="+runID))})
	if err != nil {
		t.Fatal(err)
	}
	up := 0
	for _, c := range cs {
		role := c.Labels["lockbench.role"]
		switch {
		case c.State == "paused":
			t.Errorf("%s is still paused after the run", c.Names)
		case role != "client" && c.State != "running":
			t.Errorf("service %s is %s, want running", c.Names, c.State)
		case role != "client":
			up++
		}
	}
	if up < 2 {
		t.Errorf("%d services left running, want the Redis node and the store", up)
	}

	clean := exec.Command(binary, "clean", "--run", runID)
	if out, err := clean.CombinedOutput(); err != nil {
		t.Fatalf("clean: %v\n%s", err, out)
	}
	assertNothingLeft(t, runID)

	logs, err := os.ReadDir(filepath.Join(dir, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if fi, err := l.Info(); err != nil || fi.Size() == 0 {
			t.Errorf("logs/%s is empty (%v)", l.Name(), err)
		}
	}
}
