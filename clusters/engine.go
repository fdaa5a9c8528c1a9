// Package clusters brings lock services up and down as containers on a
// private Docker network, one network and one label value per run.
package clusters

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// Label is the label key every container and network of a run carries; its
// value is the run id.
const Label = "lockbench"

// Engine is a connection to a Docker engine.
type Engine struct {
	*client.Client
	Version string
	// Cores and StorageDriver are the engine host's, as it reports them:
	// with Version, the host class that makes latencies comparable.
	Cores         int
	StorageDriver string
}

// Connect reaches the engine named by DOCKER_HOST (or the local socket). The
// engine may be older than this client, so the API version is negotiated.
// An ssh:// engine is reached as the docker CLI reaches it: `ssh HOST docker
// system dial-stdio`, through the CLI's own connection helper.
func Connect(ctx context.Context) (*Engine, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host := os.Getenv("DOCKER_HOST"); strings.HasPrefix(host, "ssh://") {
		helper, err := connhelper.GetConnectionHelper(host)
		if err != nil {
			return nil, fmt.Errorf("docker client: %w", err)
		}
		opts = append(opts, client.WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: helper.Dialer}}),
			client.WithHost(helper.Host), client.WithDialContext(helper.Dialer))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := cli.ServerVersion(ctx)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker engine not reachable at %s: %w", cmp.Or(os.Getenv("DOCKER_HOST"), cli.DaemonHost()), err)
	}
	info, err := cli.Info(ctx)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker engine at %s: info: %w", cmp.Or(os.Getenv("DOCKER_HOST"), cli.DaemonHost()), err)
	}
	return &Engine{Client: cli, Version: v.Version, Cores: info.NCPU, StorageDriver: info.Driver}, nil
}

// Leftover is a container or network labelled by some run.
type Leftover struct {
	Kind, Name, RunID string
}

// RemoveRun removes every container and network of run runID, whatever
// state they are in. Its liveness container goes after the others, beside
// the network, so that the run counts as live until nothing of it is left
// that runs. It returns what it removed; it keeps going past errors and
// returns them joined.
func (e *Engine) RemoveRun(ctx context.Context, runID string) ([]Leftover, error) {
	f := filters.NewArgs(filters.Arg("label", Label+"="+runID))
	cs, err := e.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list the containers of run %s: %w", runID, err)
	}
	isLiveness := func(c container.Summary) bool { return c.Labels[roleLabel] == LivenessRole }
	removed, err := e.removeContainers(ctx, slices.DeleteFunc(slices.Clone(cs), isLiveness))
	errs := []error{err}
	// The liveness container has no network: it goes while the network's
	// removal waits for the engine to release the others' endpoints.
	var last []Leftover
	var lastErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		last, lastErr = e.removeContainers(ctx, slices.DeleteFunc(cs, func(c container.Summary) bool { return !isLiveness(c) }))
	}()
	ns, err := e.NetworkList(ctx, network.ListOptions{Filters: f})
	errs = append(errs, err)
	for _, n := range ns {
		if err := e.removeNetwork(ctx, n.ID); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
			continue
		}
		removed = append(removed, Leftover{Kind: "network", Name: n.Name, RunID: n.Labels[Label]})
	}
	<-done
	return append(removed, last...), errors.Join(append(errs, lastErr)...)
}

// removeContainers removes cs side by side, waking each first, and returns
// those it removed.
func (e *Engine) removeContainers(ctx context.Context, cs []container.Summary) ([]Leftover, error) {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			// A frozen process cannot be killed cleanly by every runtime;
			// wake it first so removal never leaves it behind.
			_ = e.ContainerKill(ctx, c.ID, "SIGCONT")
			if err := e.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !client.IsErrNotFound(err) {
				errs[i] = fmt.Errorf("remove container %s: %w", name(c.Names), err)
			}
		})
	}
	wg.Wait()
	var removed []Leftover
	for i, c := range cs {
		if errs[i] == nil {
			removed = append(removed, Leftover{Kind: "container", Name: name(c.Names), RunID: c.Labels[Label]})
		}
	}
	return removed, errors.Join(errs...)
}

func name(names []string) string {
	if len(names) == 0 {
		return "?"
	}
	n := names[0]
	if len(n) > 0 && n[0] == '/' {
		n = n[1:]
	}
	return n
}

// removeNetwork removes a network, trying again for a few seconds while
// the engine still counts an endpoint of a container it has just removed
// ("has active endpoints"): the engine releases endpoints after it
// answers the container's removal, so the first try can race it.
func (e *Engine) removeNetwork(ctx context.Context, id string) error {
	var err error
	for try := 0; try < 20; try++ {
		if err = e.NetworkRemove(ctx, id); err == nil || !strings.Contains(err.Error(), "active endpoints") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
	// Engine 20.10 can keep an endpoint after its container is gone, and
	// only its restart releases it: say so, for no retry or forced
	// disconnect will.
	if ins, ierr := e.NetworkInspect(ctx, id, network.InspectOptions{}); ierr == nil && len(ins.Containers) == 0 {
		return fmt.Errorf("%w (the engine keeps an endpoint with no container attached; restarting the engine releases it)", err)
	}
	return err
}
