package check

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	servingv1alpha1 "github.com/kserve/kserve/pkg/apis/serving/v1alpha1"
	servingv1beta1 "github.com/kserve/kserve/pkg/apis/serving/v1beta1"
	"github.com/kserve/kserve/pkg/constants"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The manifests are every YAML file of deploy/kubernetes, the directory above this module.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests found in deploy/kubernetes (%v)", err)
	}
	return files
}

func decodeAll(t *testing.T) []Object {
	t.Helper()
	var all []Object
	for _, f := range manifestFiles(t) {
		objs, err := DecodeFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == 0 {
			t.Fatalf("%s holds no manifest", f)
		}
		all = append(all, objs...)
	}
	return all
}

func only[T any](objs []Object) []*T {
	var out []*T
	for _, o := range objs {
		if v, ok := o.Value.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

func TestEveryManifestDecodesStrictly(t *testing.T) {
	objs := decodeAll(t)
	counts := map[string]int{}
	for _, o := range objs {
		counts[o.Kind.Kind]++
	}
	for _, kind := range []string{"ConfigMap", "Deployment", "StatefulSet", "Service", "PersistentVolumeClaim", "ServingRuntime", "InferenceService"} {
		if counts[kind] == 0 {
			t.Errorf("no %s among the manifests (found %v)", kind, counts)
		}
	}
}

// The node's node.yaml, as hloserve reads it from the ConfigMap.
type nodeYAML struct {
	ModelRepo string `json:"model_repo"`
	Global    struct {
		CacheDir  string `json:"cache_dir"`
		Endpoints struct {
			HTTPPort    int32 `json:"http_port"`
			GRPCPort    int32 `json:"grpc_port"`
			MetricsPort int32 `json:"metrics_port"`
			ConsolePort int32 `json:"console_port"`
		} `json:"endpoints"`
	} `json:"global"`
}

func TestNodeDeploymentAgreesWithItsConfigAndServices(t *testing.T) {
	objs := decodeAll(t)
	var d *appsv1.Deployment
	for _, dep := range only[appsv1.Deployment](objs) {
		if dep.Name == "hloserve" {
			d = dep
		}
	}
	if d == nil {
		t.Fatal("no Deployment named hloserve")
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !strings.HasPrefix(c.Image, "hloserve:") || len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("the container runs the image's hloserve command: image %q args %q", c.Image, c.Args)
	}
	if q, ok := c.Resources.Limits["nvidia.com/gpu"]; !ok || q.Value() < 1 {
		t.Errorf("the node asks for a GPU: limits %v", c.Resources.Limits)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod template's labels", k, v)
		}
	}

	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	probePath := func(name string, p *corev1.Probe) (string, int32) {
		if p == nil || p.HTTPGet == nil {
			t.Fatalf("%s: want an httpGet probe", name)
		}
		port, ok := ports[p.HTTPGet.Port.String()]
		if !ok {
			t.Errorf("%s probes port %q, which the container does not name", name, p.HTTPGet.Port.String())
		}
		return p.HTTPGet.Path, port
	}
	if path, _ := probePath("readiness", c.ReadinessProbe); path != "/readyz" {
		t.Errorf("readiness probes %s, want /readyz", path)
	}
	if path, _ := probePath("liveness", c.LivenessProbe); path != "/healthz" {
		t.Errorf("liveness probes %s, want /healthz", path)
	}
	if path, _ := probePath("startup", c.StartupProbe); path != "/healthz" {
		t.Errorf("startup probes %s, want /healthz", path)
	}

	// The ports the container declares are the ones its node.yaml makes hloserve listen on.
	var cfgName string
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Errorf("volumeMount %s names no volume", m.Name)
			continue
		}
		if v.ConfigMap != nil && m.MountPath == "/etc/hloserve" {
			cfgName = v.ConfigMap.Name
		}
	}
	claims := map[string]bool{}
	for _, pvc := range only[corev1.PersistentVolumeClaim](objs) {
		claims[pvc.Name] = true
	}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil && !claims[v.PersistentVolumeClaim.ClaimName] {
			t.Errorf("volume %s claims %s, which no manifest makes", v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	}
	var node *nodeYAML
	for _, cm := range only[corev1.ConfigMap](objs) {
		if cm.Name != cfgName {
			continue
		}
		node = &nodeYAML{}
		if err := yaml.Unmarshal([]byte(cm.Data["node.yaml"]), node); err != nil {
			t.Fatalf("ConfigMap %s: node.yaml: %v", cm.Name, err)
		}
	}
	if node == nil {
		t.Fatalf("no ConfigMap %q mounted at /etc/hloserve", cfgName)
	}
	want := map[string]int32{
		"http":    node.Global.Endpoints.HTTPPort,
		"grpc":    node.Global.Endpoints.GRPCPort,
		"metrics": node.Global.Endpoints.MetricsPort,
		"console": node.Global.Endpoints.ConsolePort,
	}
	for name, port := range want {
		if ports[name] != port || port == 0 {
			t.Errorf("container port %s is %d, node.yaml listens on %d", name, ports[name], port)
		}
	}
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = true
	}
	if !mounts[node.ModelRepo] || !mounts[node.Global.CacheDir] {
		t.Errorf("model_repo %s and cache_dir %s are volumes (mounted: %v)", node.ModelRepo, node.Global.CacheDir, mounts)
	}

	for _, s := range only[corev1.Service](objs) {
		if s.Spec.Selector["app.kubernetes.io/component"] != "node" {
			continue
		}
		for k, v := range s.Spec.Selector {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("Service %s selects %s=%s, which the node's pods do not carry", s.Name, k, v)
			}
		}
		for _, p := range s.Spec.Ports {
			if _, ok := ports[p.TargetPort.String()]; !ok {
				t.Errorf("Service %s targets port %q, which the container does not name", s.Name, p.TargetPort.String())
			}
		}
	}
}

func TestInferenceServicesUseTheHloserveRuntime(t *testing.T) {
	objs := decodeAll(t)
	runtimes := map[string]*servingv1alpha1.ServingRuntime{}
	for _, r := range only[servingv1alpha1.ServingRuntime](objs) {
		runtimes[r.Name] = r
		spec := r.Spec
		for _, p := range []string{"v2", "grpc-v2"} {
			if !slices.Contains(spec.ProtocolVersions, constants.InferenceServiceProtocol(p)) {
				t.Errorf("ServingRuntime %s: protocolVersions %v lack %s", r.Name, spec.ProtocolVersions, p)
			}
		}
		if len(spec.Containers) != 1 || spec.Containers[0].Name != "kserve-container" {
			t.Fatalf("ServingRuntime %s: want one container named kserve-container", r.Name)
		}
		c := spec.Containers[0]
		if len(c.Args) == 0 || c.Args[0] != "serve" {
			t.Errorf("ServingRuntime %s runs %q, want hloserve serve", r.Name, c.Args)
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if env["HLOSERVE_MODEL_REPO"] != "/mnt/models" {
			t.Errorf("ServingRuntime %s serves %q, want KServe's /mnt/models", r.Name, env["HLOSERVE_MODEL_REPO"])
		}
	}
	claims := map[string]bool{}
	for _, pvc := range only[corev1.PersistentVolumeClaim](objs) {
		claims[pvc.Name] = true
	}
	isvcs := only[servingv1beta1.InferenceService](objs)
	if len(isvcs) == 0 {
		t.Fatal("no InferenceService")
	}
	for _, isvc := range isvcs {
		m := isvc.Spec.Predictor.Model
		if m == nil || m.Runtime == nil {
			t.Fatalf("InferenceService %s names no runtime", isvc.Name)
		}
		r, ok := runtimes[*m.Runtime]
		if !ok {
			t.Fatalf("InferenceService %s uses runtime %q, which no manifest defines", isvc.Name, *m.Runtime)
		}
		if !slices.ContainsFunc(r.Spec.SupportedModelFormats, func(f servingv1alpha1.SupportedModelFormat) bool {
			return f.Name == m.ModelFormat.Name && f.Version != nil && m.ModelFormat.Version != nil && *f.Version == *m.ModelFormat.Version
		}) {
			t.Errorf("InferenceService %s: model format %s is not one runtime %s supports", isvc.Name, m.ModelFormat.Name, r.Name)
		}
		if m.StorageURI == nil || !strings.HasPrefix(*m.StorageURI, "pvc://") {
			t.Fatalf("InferenceService %s: storageUri %v, want a pvc:// model repository", isvc.Name, m.StorageURI)
		}
		claim := strings.SplitN(strings.TrimPrefix(*m.StorageURI, "pvc://"), "/", 2)[0]
		if !claims[claim] {
			t.Errorf("InferenceService %s reads claim %s, which no manifest makes", isvc.Name, claim)
		}
		if q, ok := m.Resources.Limits["nvidia.com/gpu"]; !ok || q.Value() < 1 {
			t.Errorf("InferenceService %s asks for no GPU", isvc.Name)
		}
	}
}

// The gateway's --worker flags name pods of the node StatefulSet through its headless Service, on
// ports those pods declare: GRPC,HTTP,METRICS in that order.
func TestGatewayWorkersAreTheFleetNodes(t *testing.T) {
	objs := decodeAll(t)
	var gw *appsv1.Deployment
	for _, d := range only[appsv1.Deployment](objs) {
		if d.Name == "hloserve-gateway" {
			gw = d
		}
	}
	sets := only[appsv1.StatefulSet](objs)
	if gw == nil || len(sets) != 1 {
		t.Fatalf("want the hloserve-gateway Deployment and one StatefulSet (got %d)", len(sets))
	}
	set := sets[0]
	headless := false
	for _, s := range only[corev1.Service](objs) {
		if s.Name == set.Spec.ServiceName && s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = true
			for k, v := range s.Spec.Selector {
				if set.Spec.Template.Labels[k] != v {
					t.Errorf("Service %s selects %s=%s, which the node pods do not carry", s.Name, k, v)
				}
			}
		}
	}
	if !headless {
		t.Errorf("StatefulSet %s: no headless Service %q gives its pods names", set.Name, set.Spec.ServiceName)
	}
	ports := map[string]int32{}
	for _, p := range set.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	c := gw.Spec.Template.Spec.Containers[0]
	// The image's entrypoint is the hloserve CLI; only `hloserve gateway` can open the state store.
	if len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "gateway" {
		t.Errorf("the gateway container runs %q %q, want the image's entrypoint with args [gateway ...]", c.Command, c.Args)
	}
	checkGatewayState(t, objs, gw)
	var workers []string
	for _, a := range c.Args {
		if w, ok := strings.CutPrefix(a, "--worker="); ok {
			workers = append(workers, w)
		}
	}
	if set.Spec.Replicas == nil || int(*set.Spec.Replicas) != len(workers) {
		t.Fatalf("%d --worker flags for %v node replicas", len(workers), set.Spec.Replicas)
	}
	for i, w := range workers {
		_, addrs, _ := strings.Cut(w, "=")
		for j, addr := range strings.Split(addrs, ",") {
			host, port, _ := strings.Cut(addr, ":")
			wantHost := fmt.Sprintf("%s-%d.%s", set.Name, i, set.Spec.ServiceName)
			wantPort := fmt.Sprint(ports[[]string{"grpc", "http", "metrics"}[j]])
			if host != wantHost || port != wantPort {
				t.Errorf("--worker %s: address %d is %s, want %s:%s", w, j, addr, wantHost, wantPort)
			}
		}
	}
}

// A typo in any field of the real manifests, however deep (a field of a Container inlined into
// KServe's ModelSpec included), fails the check and names the field.
func TestMisspeltFieldsFail(t *testing.T) {
	cases := []struct{ file, from, to, want string }{
		{"node.yaml", "containerPort: 8000", "containerPorts: 8000", `unknown field "spec.template.spec.containers[0].ports[0].containerPorts"`},
		{"node.yaml", "readinessProbe:", "readinesProbe:", `unknown field "spec.template.spec.containers[0].readinesProbe"`},
		{"node.yaml", "claimName: hloserve-state", "ClaimName: hloserve-state", `unknown field "spec.template.spec.volumes[2].persistentVolumeClaim.ClaimName"`},
		{"node.yaml", "targetPort: http", "targetport: http", `unknown field "spec.ports[0].targetport"`},
		{"node.yaml", "accessModes: [ReadOnlyMany]", "accessMode: [ReadOnlyMany]", `unknown field "spec.accessMode"`},
		{"kserve.yaml", "supportedModelFormats:", "supportedModelFormat:", `unknown field "spec.supportedModelFormat"`},
		{"kserve.yaml", "protocolVersions:", "protocolVersion:", `unknown field "spec.protocolVersion"`},
		{"kserve.yaml", "storageUri: pvc://hloserve-models/\n      resources", "storageURI: pvc://hloserve-models/\n      resources", `unknown field "spec.predictor.model.storageURI"`},
		{"kserve.yaml", "containerPort: 9000", "containerport: 9000", `unknown field "spec.predictor.model.ports[0].containerport"`},
		{"fleet.yaml", "serviceName: hloserve-nodes", "servicename: hloserve-nodes", `unknown field "spec.servicename"`},
		{"fleet.yaml", "volumeClaimTemplates:", "volumeClaimTemplate:", `unknown field "spec.volumeClaimTemplate"`},
		{"kserve.yaml", "kind: InferenceService", "kind: InferenceServices", `unknown kind "InferenceServices"`},
		{"kserve.yaml", "    minReplicas: 1\n", "    minReplicas: 1\n    minReplicas: 2\n", `"minReplicas" already set in map`},
	}
	for _, tc := range cases {
		t.Run(tc.file+": "+tc.to, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), tc.from) {
				t.Fatalf("%s no longer contains %q: update this case", tc.file, tc.from)
			}
			bad := strings.Replace(string(data), tc.from, tc.to, 1)
			_, err = Decode(tc.file, []byte(bad))
			if err == nil {
				t.Fatalf("EXPECTED FAILURE missing: %q -> %q decoded without error", tc.from, tc.to)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name %s", err, tc.want)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// The gateway's --state-url names a SQLite file on a volume it mounts, backed by a claim that a
// manifest makes: placement made from the console outlives the pod.
func checkGatewayState(t *testing.T, objs []Object, gw *appsv1.Deployment) {
	t.Helper()
	c := gw.Spec.Template.Spec.Containers[0]
	var file string
	for _, a := range c.Args {
		if u, ok := strings.CutPrefix(a, "--state-url="); ok {
			f, isSqlite := strings.CutPrefix(u, "sqlite:")
			if !isSqlite {
				t.Errorf("--state-url=%s: the manifests bring no PostgreSQL, want sqlite:PATH", u)
			}
			file = f
		}
	}
	if file == "" {
		t.Fatalf("the gateway has no --state-url: its placement would not survive a restart")
	}
	volume := ""
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") && !m.ReadOnly {
			volume = m.Name
		}
	}
	if volume == "" {
		t.Fatalf("the state file %s is on no writable volume the gateway mounts", file)
	}
	claims := map[string]bool{}
	for _, pvc := range only[corev1.PersistentVolumeClaim](objs) {
		claims[pvc.Name] = true
	}
	for _, v := range gw.Spec.Template.Spec.Volumes {
		if v.Name == volume {
			if v.PersistentVolumeClaim == nil || !claims[v.PersistentVolumeClaim.ClaimName] {
				t.Errorf("volume %s of the gateway is not a claim that a manifest makes", volume)
			}
			return
		}
	}
	t.Errorf("the gateway mounts volume %s, which its pod does not declare", volume)
}
