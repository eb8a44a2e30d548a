package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/fetchcmd"
	"github.com/drama-tts/drama/cmd/internal/realclient"
	"github.com/drama-tts/drama/cmd/internal/servecmd"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/httpapi/httpapitest"
)

// manifest is the part of docs/deploy/kubernetes.yaml the test reads.
type manifest struct {
	Kind     string
	Metadata struct{ Name string }
	Spec     struct {
		AccessModes          []string `yaml:"accessModes"`
		VolumeClaimTemplates []struct {
			Metadata struct{ Name string }
			Spec     struct {
				AccessModes []string `yaml:"accessModes"`
			}
		} `yaml:"volumeClaimTemplates"`
		Ports []struct {
			Port       int
			TargetPort string `yaml:"targetPort"`
		}
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
				InitContainers                []container `yaml:"initContainers"`
				Containers                    []container
				Volumes                       []struct {
					Name                  string
					PersistentVolumeClaim struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				}
			}
		}
	}
}

type container struct {
	Name    string
	Command []string
	Env     []struct {
		Name      string
		Value     *string
		ValueFrom *struct {
			SecretKeyRef *struct{ Name, Key string } `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	}
	Ports []struct {
		Name          string
		ContainerPort int `yaml:"containerPort"`
	}
	Resources struct {
		Limits map[string]string
	}
	StartupProbe   *probe `yaml:"startupProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Lifecycle      struct {
		PreStop struct {
			Sleep struct{ Seconds int }
		} `yaml:"preStop"`
	}
	VolumeMounts []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet struct {
		Path string
		Port string
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

func readManifests(t *testing.T) []manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realclient.ModuleRoot(t), "docs", "deploy", "kubernetes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []manifest
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var m manifest
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("docs/deploy/kubernetes.yaml: %v", err)
		}
		out = append(out, m)
	}
}

// parseServe parses a container's drama serve command with the real
// command tree, drama serve's flag checks included, in the container's
// environment (env: name, value pairs).
func parseServe(t *testing.T, command []string, env ...string) *servecmd.Options {
	t.Helper()
	if len(command) < 2 || command[0] != "drama" || command[1] != "serve" {
		t.Fatalf("container command %q: want drama serve ...", command)
	}
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, env...)
	root := NewRootCmd(f)
	old, _, _ := root.Find([]string{"serve"})
	root.RemoveCommand(old)
	var got *servecmd.Options
	root.AddCommand(servecmd.NewCmd(f, func(_ context.Context, o *servecmd.Options) error { got = o; return nil }))
	root.SetArgs(command[1:])
	if err := root.Execute(); err != nil || got == nil {
		t.Fatalf("%q is not a drama serve command line: %v", command, err)
	}
	return got
}

// containerEnv is a container's environment as name, value pairs, a
// Secret's value standing in for itself, and whether the API key comes from
// a Secret; an API key written in the manifest itself is an error.
func containerEnv(t *testing.T, c container) (env []string, keyFromSecret bool) {
	t.Helper()
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env = append(env, e.Name, "secret-"+e.ValueFrom.SecretKeyRef.Name+"-"+e.ValueFrom.SecretKeyRef.Key+"-0123456789abcdef")
			keyFromSecret = keyFromSecret || e.Name == cmdutil.APIKeyEnv
		case e.Value != nil:
			if e.Name == cmdutil.APIKeyEnv {
				t.Errorf("env %s has its value in the manifest: take it from a Secret (valueFrom.secretKeyRef)", e.Name)
			}
			env = append(env, e.Name, *e.Value)
		}
	}
	return env, keyFromSecret
}

// TestKubernetesManifests holds docs/deploy/kubernetes.yaml to drama serve:
// the command is a real drama serve command line, the probes ask routes it
// answers on the port it listens on, the readiness probe is the route that
// turns 503 at SIGTERM and liveness the one that stays 200, one GPU a pod,
// and the grace period covers the preStop sleep, the drain and the
// engine's stop.
func TestKubernetesManifests(t *testing.T) {
	var pod *manifest
	var svc *manifest
	ms := readManifests(t)
	for i, m := range ms {
		switch m.Kind {
		case "StatefulSet", "Deployment":
			pod = &ms[i]
		case "Service":
			svc = &ms[i]
		}
	}
	if pod == nil || svc == nil {
		t.Fatal("docs/deploy/kubernetes.yaml: want a StatefulSet (or Deployment) and a Service")
	}
	spec := pod.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want drama serve alone", len(spec.Containers))
	}
	c := spec.Containers[0]
	env, keyFromSecret := containerEnv(t, c)
	opts := parseServe(t, c.Command, env...)
	if opts.AllowRemote && !keyFromSecret {
		t.Errorf("drama serve --allow-remote with no API key: give the container env %s from a Secret (valueFrom.secretKeyRef)", cmdutil.APIKeyEnv)
	}
	_, port, _ := net.SplitHostPort(opts.Addr)
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if strconv.Itoa(ports["http"]) != port {
		t.Errorf("containerPort http %d, drama serve listens on %s", ports["http"], opts.Addr)
	}
	if len(svc.Spec.Ports) != 1 || ports[svc.Spec.Ports[0].TargetPort] == 0 {
		t.Errorf("the Service's targetPort names no port of the container: %+v", svc.Spec.Ports)
	}
	if c.Resources.Limits["nvidia.com/gpu"] != "1" {
		t.Errorf("nvidia.com/gpu limit %q, want 1 a pod", c.Resources.Limits["nvidia.com/gpu"])
	}

	// the probes against drama serve's real routes, as they answer while
	// serving and while draining
	fake := enginetest.NewFake()
	api := httpapitest.Over(t, fake, httpapi.Config{Addr: "0.0.0.0:" + port})
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, p := range map[string]*probe{"startupProbe": c.StartupProbe, "readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
		if p == nil {
			t.Fatalf("no %s", name)
		}
		if ports[p.HTTPGet.Port] == 0 {
			t.Errorf("%s: port %q is no port of the container", name, p.HTTPGet.Port)
		}
		if code := get(p.HTTPGet.Path); code != 200 {
			t.Errorf("%s: GET %s answers %d on a serving drama serve", name, p.HTTPGet.Path, code)
		}
	}
	api.Drain()
	if code := get(c.ReadinessProbe.HTTPGet.Path); code != 503 {
		t.Errorf("readinessProbe GET %s answers %d while drama serve drains: want 503, so the pod leaves the Service", c.ReadinessProbe.HTTPGet.Path, code)
	}
	if code := get(c.LivenessProbe.HTTPGet.Path); code != 200 {
		t.Errorf("livenessProbe GET %s answers %d while drama serve drains: want 200, or the kubelet kills a draining pod", c.LivenessProbe.HTTPGet.Path, code)
	}
	startup := time.Duration(c.StartupProbe.PeriodSeconds*c.StartupProbe.FailureThreshold) * time.Second
	if startup < 25*time.Second*4 {
		t.Errorf("startupProbe allows %v: under 4 times the 25 s cold start of nvfp4", startup)
	}

	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	grace := time.Duration(spec.TerminationGracePeriodSeconds) * time.Second
	if preStop <= 0 {
		t.Error("no preStop sleep: endpoints may still send to a pod that drains")
	}
	if need := preStop + 2*opts.Grace; grace <= need {
		t.Errorf("terminationGracePeriodSeconds %v: not over preStop %v + drain %v + engine stop %v", grace, preStop, opts.Grace, opts.Grace)
	}

	for _, ic := range spec.InitContainers {
		if len(ic.Command) < 2 || ic.Command[0] != "drama" || ic.Command[1] != "fetch" {
			t.Fatalf("init container %s: %q: want drama fetch", ic.Name, ic.Command)
		}
		ios, _, _, _ := cmdtest.IOStreams()
		f := cmdtest.Factory(ios)
		root := NewRootCmd(f)
		old, _, _ := root.Find([]string{"fetch"})
		root.RemoveCommand(old)
		ran := false
		root.AddCommand(fetchcmd.NewCmd(f, func(context.Context, *fetchcmd.FetchOptions) error { ran = true; return nil }))
		root.SetArgs(ic.Command[1:])
		if err := root.Execute(); err != nil || !ran {
			t.Errorf("init container %s: %q is not a drama fetch command line: %v", ic.Name, ic.Command, err)
		}
	}
}

// TestKubernetesVoiceStore holds the manifests' voices to what a shared
// store needs: drama serve's --voice-store is the mount of a volume whose
// claim every pod shares (ReadWriteMany), and --root the mount of each
// pod's own claim (the weights, ReadWriteOnce), not the shared one.
func TestKubernetesVoiceStore(t *testing.T) {
	ms := readManifests(t)
	claims := map[string][]string{} // claim name -> access modes
	var pod *manifest
	for i, m := range ms {
		switch m.Kind {
		case "PersistentVolumeClaim":
			claims[m.Metadata.Name] = m.Spec.AccessModes
		case "StatefulSet", "Deployment":
			pod = &ms[i]
		}
	}
	if pod == nil {
		t.Fatal("docs/deploy/kubernetes.yaml: no StatefulSet")
	}
	c := pod.Spec.Template.Spec.Containers[0]
	env, _ := containerEnv(t, c)
	opts := parseServe(t, c.Command, env...)
	if opts.VoiceStore == "" {
		t.Fatal("drama serve has no --voice-store: a clone made through one pod exists on that pod alone")
	}
	mounts := map[string]string{} // mount path -> volume
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	shared := map[string]string{} // volume -> its claim
	for _, v := range pod.Spec.Template.Spec.Volumes {
		shared[v.Name] = v.PersistentVolumeClaim.ClaimName
	}
	own := map[string][]string{} // per-pod claim templates
	for _, ct := range pod.Spec.VolumeClaimTemplates {
		own[ct.Metadata.Name] = ct.Spec.AccessModes
	}
	vol, ok := mounts[opts.VoiceStore]
	if !ok {
		t.Fatalf("--voice-store %s is no volume mount of the container", opts.VoiceStore)
	}
	claim := shared[vol]
	if claim == "" || !slices.Contains(claims[claim], "ReadWriteMany") {
		t.Errorf("--voice-store %s: volume %s is not a ReadWriteMany claim every pod shares (claim %q: %v)", opts.VoiceStore, vol, claim, claims[claim])
	}
	root := ""
	for i, a := range c.Command {
		if a == "--root" && i+1 < len(c.Command) {
			root = c.Command[i+1]
		}
	}
	if _, ok := own[mounts[root]]; !ok {
		t.Errorf("--root %s is not on the pod's own claim (drama serve refuses a root another uses)", root)
	}
}
