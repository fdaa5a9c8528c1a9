// Package images builds the one node image every container of a run uses:
// Debian's redis-server, the tools faults need, and the lockbench binary
// (client worker and resource store). It builds offline: with no registry
// the Debian base comes from debootstrap and `docker import`.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
)

// BaseTag names the Debian base with the node's packages. The suffix changes
// whenever Packages does, so an old base is never reused by mistake.
const BaseTag = "lockbench-base:bookworm-1"

// NodeRepo is the repository of node images; each tag is a content hash of
// the base and the binary, and "latest" follows the newest build.
const NodeRepo = "lockbench-node"

// Packages are installed in the base: the server under test and what faults
// need (ip and iptables for partitions, ps and kill for process faults).
var Packages = []string{"redis-server", "iproute2", "iptables", "procps"}

// Method picks how the base is made.
type Method string

const (
	Auto        Method = "auto"       // Dockerfile when debian:bookworm-slim can be had, else debootstrap
	Dockerfile  Method = "dockerfile" // FROM debian:bookworm-slim, apt-get install
	Debootstrap Method = "debootstrap"
)

// ParseMethod validates a method name.
func ParseMethod(s string) (Method, error) {
	switch m := Method(s); m {
	case Auto, Dockerfile, Debootstrap:
		return m, nil
	}
	return "", fmt.Errorf("unknown base method %q (want auto, dockerfile or debootstrap)", s)
}

// Options configure a build.
type Options struct {
	Binary string // the lockbench binary to put in the image
	Method Method
	Mirror string // Debian mirror for debootstrap
	Force  bool   // rebuild even when the images exist
	Log    io.Writer
}

// Ensure returns the node image for opts.Binary, building the base and the
// node image only when they are missing.
func Ensure(ctx context.Context, cli *client.Client, opts Options) (string, error) {
	tag, err := nodeTag(opts.Binary)
	if err != nil {
		return "", err
	}
	if !opts.Force && exists(ctx, cli, tag) {
		return tag, nil
	}
	if opts.Force || !exists(ctx, cli, BaseTag) {
		if err := buildBase(ctx, cli, opts); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(opts.Log, "building %s\n", tag)
	if err := buildNode(ctx, cli, opts.Binary, tag, opts.Log); err != nil {
		return "", err
	}
	pruneNodes(ctx, cli, tag)
	return tag, nil
}

// pruneGrace is how long a node image of another binary is kept. Two
// lockbench binaries (a test binary and a `make` build, two checkouts) may
// run side by side on one engine; an image built by one of them minutes ago
// may be about to start its next run's containers, which the engine's "in
// use" refusal does not cover.
const pruneGrace = time.Hour

// pruneNodes removes node images of earlier binaries, so that rebuilding on
// every change of the binary does not fill the disk. An image still used by
// a container is refused by the engine and stays; one built within
// pruneGrace stays too.
func pruneNodes(ctx context.Context, cli *client.Client, keep string) {
	list, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", NodeRepo))})
	if err != nil {
		return
	}
	for _, img := range list {
		if time.Since(time.Unix(img.Created, 0)) < pruneGrace {
			continue
		}
		if !slices.Contains(img.RepoTags, keep) {
			_, _ = cli.ImageRemove(ctx, img.ID, image.RemoveOptions{PruneChildren: true})
		}
	}
}

func exists(ctx context.Context, cli *client.Client, ref string) bool {
	_, err := cli.ImageInspect(ctx, ref)
	return err == nil
}

func nodeTag(binary string) (string, error) {
	f, err := os.Open(binary)
	if err != nil {
		return "", fmt.Errorf("open lockbench binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	io.WriteString(h, BaseTag+"\n")
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash lockbench binary: %w", err)
	}
	return NodeRepo + ":" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

func buildBase(ctx context.Context, cli *client.Client, opts Options) error {
	method := opts.Method
	if method == Auto {
		method = Debootstrap
		if canHaveSlim(ctx, cli, opts.Log) {
			method = Dockerfile
		}
	}
	switch method {
	case Dockerfile:
		fmt.Fprintf(opts.Log, "building %s FROM debian:bookworm-slim\n", BaseTag)
		df := "FROM debian:bookworm-slim\n" +
			"RUN apt-get update && apt-get install -y --no-install-recommends " + strings.Join(Packages, " ") +
			" && rm -rf /var/lib/apt/lists/*\n"
		return dockerBuild(ctx, cli, map[string][]byte{"Dockerfile": []byte(df)}, []string{BaseTag})
	default:
		return debootstrapBase(ctx, cli, opts)
	}
}

// canHaveSlim reports whether debian:bookworm-slim is present or can be
// pulled; with no registry the pull fails fast, or times out.
func canHaveSlim(ctx context.Context, cli *client.Client, log io.Writer) bool {
	if exists(ctx, cli, "debian:bookworm-slim") {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rc, err := cli.ImagePull(ctx, "debian:bookworm-slim", image.PullOptions{})
	if err == nil {
		err = jsonmessage.DisplayJSONMessagesStream(rc, io.Discard, 0, false, nil)
		rc.Close()
	}
	if err != nil {
		fmt.Fprintf(log, "debian:bookworm-slim cannot be had (%v); using debootstrap\n", firstLine(err))
		return false
	}
	return true
}

func debootstrapBase(ctx context.Context, cli *client.Client, opts Options) error {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return errors.New("no registry base image and no debootstrap: install Debian's debootstrap package (apt-get install debootstrap)")
	}
	dir, err := os.MkdirTemp("", "lockbench-rootfs-")
	if err != nil {
		return fmt.Errorf("rootfs dir: %w", err)
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(opts.Log, "building %s with debootstrap from %s (about a minute)\n", BaseTag, opts.Mirror)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase",
		"--include="+strings.Join(Packages, ","), "bookworm", dir, opts.Mirror)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debootstrap: %w: %s", err, lastLines(out.String(), 5))
	}
	for _, junk := range []string{"var/cache/apt/archives", "var/lib/apt/lists"} {
		entries, _ := os.ReadDir(dir + "/" + junk)
		for _, e := range entries {
			if e.Type().IsRegular() {
				os.Remove(dir + "/" + junk + "/" + e.Name())
			}
		}
	}
	tarCmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "-C", dir, "-c", ".")
	stream, err := tarCmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("tar rootfs: %w", err)
	}
	if err := tarCmd.Start(); err != nil {
		return fmt.Errorf("tar rootfs: %w", err)
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: stream, SourceName: "-"}, BaseTag, image.ImportOptions{})
	if err == nil {
		err = jsonmessage.DisplayJSONMessagesStream(rc, io.Discard, 0, false, nil)
		rc.Close()
	}
	if werr := tarCmd.Wait(); err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("import base image: %w", err)
	}
	return nil
}

func buildNode(ctx context.Context, cli *client.Client, binary, tag string, log io.Writer) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("read lockbench binary: %w", err)
	}
	files := map[string][]byte{"lockbench": bin}
	df := "FROM " + BaseTag + "\nCOPY lockbench /usr/local/bin/lockbench\n"
	if shim, err := compileShim(ctx); err != nil {
		fmt.Fprintf(log, "no clock shim in the image, the clock fault will be skipped: %v\n", err)
	} else {
		files[ShimName] = shim
		df += "COPY " + ShimName + " /usr/local/lib/" + ShimName + "\n"
	}
	files["Dockerfile"] = []byte(df)
	return dockerBuild(ctx, cli, files, []string{tag, NodeRepo + ":latest"})
}

// ShimName is the clock shim's file in the image, under /usr/local/lib.
const ShimName = "lockbench-clock.so"

//go:embed shim/clock.c
var shimSource []byte

// compileShim builds the clock shim with the host's C compiler: the node
// image has none, and its glibc is Debian bookworm's, as the host's is on
// the machines lockbench builds on.
func compileShim(ctx context.Context) ([]byte, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return nil, errors.New("no C compiler (cc) on this machine")
	}
	dir, err := os.MkdirTemp("", "lockbench-shim-")
	if err != nil {
		return nil, fmt.Errorf("shim build dir: %w", err)
	}
	defer os.RemoveAll(dir)
	src, out := filepath.Join(dir, "clockshim.c"), filepath.Join(dir, ShimName)
	if err := os.WriteFile(src, shimSource, 0o644); err != nil {
		return nil, fmt.Errorf("shim source: %w", err)
	}
	if msg, err := exec.CommandContext(ctx, cc, "-shared", "-fPIC", "-O2", "-o", out, src).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("compile clock shim: %w: %s", err, msg)
	}
	return os.ReadFile(out)
}

func dockerBuild(ctx context.Context, cli *client.Client, files map[string][]byte, tags []string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data))}); err != nil {
			return fmt.Errorf("build context: %w", err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	resp, err := cli.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Tags: tags, Remove: true, ForceRemove: true, Version: build.BuilderV1,
		Labels: map[string]string{"org.opencontainers.image.title": "lockbench node"},
	})
	if err != nil {
		return fmt.Errorf("build %s: %w", tags[0], err)
	}
	defer resp.Body.Close()
	if err := jsonmessage.DisplayJSONMessagesStream(resp.Body, io.Discard, 0, false, nil); err != nil {
		return fmt.Errorf("build %s: %w", tags[0], err)
	}
	return nil
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Kind names an image a lock service's nodes run instead of the node image
// (Kind ""), for a server the node image does not hold.
type Kind string

// sibling is how an image of a Kind is made over the node base: its
// Dockerfile, and what it holds, for the build's log line.
type sibling struct {
	dockerfile func() string
	holds      string
}

// kinds are the images lock services run instead of the node image.
var kinds = map[Kind]sibling{
	JVM:      {jvmDockerfile, "Debian's ZooKeeper and OpenJDK 17"},
	Postgres: {postgresDockerfile, "Debian's PostgreSQL 15"},
}

// tag is the image's name for the current node base and what is installed
// over it: a hash of its Dockerfile, which names the base.
func (s sibling) tag(k Kind) string {
	h := sha256.Sum256([]byte(s.dockerfile()))
	return k.repo() + ":" + hex.EncodeToString(h[:])[:12]
}

// EnsureKind returns the image of kind k, building it (and the node base
// under it) only when missing. It needs Debian's package mirror to be
// reachable from a build container.
func EnsureKind(ctx context.Context, cli *client.Client, k Kind, opts Options) (string, error) {
	s, ok := kinds[k]
	if !ok {
		return "", fmt.Errorf("no image of kind %q", k)
	}
	tag := s.tag(k)
	if !opts.Force && exists(ctx, cli, tag) {
		return tag, nil
	}
	if !exists(ctx, cli, BaseTag) {
		if err := buildBase(ctx, cli, opts); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(opts.Log, "building %s (%s, once)\n", tag, s.holds)
	if err := dockerBuild(ctx, cli, map[string][]byte{"Dockerfile": []byte(s.dockerfile())}, []string{tag, k.Latest()}); err != nil {
		return "", err
	}
	return tag, nil
}

// Latest is the tag that always names the newest image of kind k, which
// docker-compose.yml refers to.
func (k Kind) Latest() string { return k.repo() + ":latest" }

func (k Kind) repo() string {
	if k == "" {
		return NodeRepo
	}
	return "lockbench-" + string(k)
}
