package fidelity

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/realkube"
)

// TestValidationAgainstTheRealServer sends the same generated objects —
// valid ones, and ones with each kind of invalid field — to fakekube and to
// a real kube-apiserver, as creates, updates of the main resource and of
// its status, and compares the answers: status code, reason, and each
// cause's type, field and message, in order. Generation is deterministic
// from CSISIM_VALIDATION_SEED (default 1); CSISIM_VALIDATION_CASES sets
// how many cases (default 2400). Every difference fails the test unless
// knownDifferences names it, with its reason.
func TestValidationAgainstTheRealServer(t *testing.T) {
	seed := envInt(t, "CSISIM_VALIDATION_SEED", 1)
	cases := envInt(t, "CSISIM_VALIDATION_CASES", 2400)
	// Only the service-account controllers: the default ServiceAccount
	// must exist for pods to be admitted, and no other controller may
	// write to the objects under test.
	real := startControlPlane(t, "validation", func(cfg *realkube.Config) {
		cfg.ControllersFlag = "serviceaccount,serviceaccount-token"
	})
	fake := fakekube.New(fakekube.Options{Seed: 1})
	servers := []*server{
		newServer(t, "kube-apiserver", real.RESTConfig()),
		newServer(t, "fakekube", fake.RESTConfig("fidelity")),
	}
	for _, s := range servers {
		s.prepareNamespace(t)
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	var diffs []string
	explained := map[string]int{}
	ops := map[string]int{}
	codes := map[int32]int{} // the real server's answers
	began := time.Now()
	for i := range cases {
		c := generateCase(r, i)
		ops[c.op]++
		got := make([]outcome, len(servers))
		for j, s := range servers {
			got[j] = s.run(t, c)
		}
		codes[got[0].code]++
		d := compare(got[0], got[1])
		if d == "" {
			continue
		}
		if why := knownDifference(c, got[0], got[1]); why != "" {
			explained[why]++
			continue
		}
		diffs = append(diffs, fmt.Sprintf("case %d %s %s [%s]:\n%s", i, c.op, c.kind.name, strings.Join(c.mutations, ", "), d))
	}
	t.Logf("%d cases (%v; kube-apiserver answered %v) in %s: %d differences, %d explained", cases, ops, codes,
		time.Since(began).Round(time.Millisecond), len(diffs), sumValues(explained))
	for why, n := range explained {
		t.Logf("explained %d×: %s", n, why)
	}
	for _, d := range diffs {
		t.Error(d)
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// testNamespace holds every namespaced object of the test.
const testNamespace = "validation"

// server is one API server under test.
type server struct {
	name    string
	dynamic dynamic.Interface
	typed   kubernetes.Interface
}

func newServer(t *testing.T, name string, cfg *rest.Config) *server {
	t.Helper()
	cfg.QPS, cfg.Burst = -1, 0
	// Warnings are not compared; keep them out of the log.
	cfg.WarningHandler = rest.NoWarnings{}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &server{name: name, dynamic: d, typed: c}
}

// prepareNamespace makes the test's namespace and, on a real server,
// waits for its default ServiceAccount, without which no pod is admitted.
func (s *server) prepareNamespace(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	if _, err := s.typed.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: testNamespace}}
	if _, err := s.typed.CoreV1().ServiceAccounts(testNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		t.Fatalf("%s: %v", s.name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := s.typed.CoreV1().ServiceAccounts(testNamespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: no default ServiceAccount: %v", s.name, err)
	}
}

// outcome is what a server answered to a case's last request.
type outcome struct {
	code    int32
	reason  metav1.StatusReason
	message string
	causes  []metav1.StatusCause
	// setup is set when the case's valid object could not be created
	// first (an update case): the case then says nothing of the update.
	setup string
}

func (o outcome) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", o.code, o.reason)
	if o.setup != "" {
		fmt.Fprintf(&b, " (setup: %s)", o.setup)
	}
	if o.message != "" {
		fmt.Fprintf(&b, "\n      %q", o.message)
	}
	for _, c := range o.causes {
		fmt.Fprintf(&b, "\n      cause %s %s: %q", c.Type, c.Field, c.Message)
	}
	return b.String()
}

// compare says how two outcomes differ, "" if they do not.
func compare(real, fake outcome) string {
	switch {
	case real.code != fake.code || real.reason != fake.reason || real.setup != fake.setup,
		!slices.Equal(real.causes, fake.causes),
		real.message != fake.message:
		return fmt.Sprintf("   kube-apiserver: %s\n   fakekube:       %s", real, fake)
	}
	return ""
}

// run sends the case: a create; or a create of the valid object, then the
// update of it or of its status.
func (s *server) run(t *testing.T, c testCase) outcome {
	ctx := context.Background()
	res := s.resource(c.kind)
	if c.op == opCreate {
		u := toUnstructured(t, c.kind, c.object)
		_, err := res.Create(ctx, u, metav1.CreateOptions{})
		return outcomeOf(err, http.StatusCreated).normalised(u.GetGenerateName())
	}
	if _, err := res.Create(ctx, toUnstructured(t, c.kind, c.base), metav1.CreateOptions{}); err != nil {
		o := outcomeOf(err, 0)
		o.setup = fmt.Sprint(err)
		return o.normalised("")
	}
	// A real server's admission and controllers may change the object
	// after its creation; the update starts from what is stored, and
	// tries again after a conflict.
	var err error
	for range 5 {
		var cur *unstructured.Unstructured
		if cur, err = res.Get(ctx, c.name(), metav1.GetOptions{}); err != nil {
			break
		}
		next := fromUnstructured(t, c.kind, cur)
		c.update(next)
		u := toUnstructured(t, c.kind, next)
		if c.op == opStatus {
			_, err = res.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		} else {
			_, err = res.Update(ctx, u, metav1.UpdateOptions{})
		}
		if !apierrors.IsConflict(err) {
			break
		}
	}
	return outcomeOf(err, http.StatusOK).normalised("")
}

// uuid matches a UID, which differs from server to server.
var uuid = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normalised is o without what two servers give differently by design:
// UIDs, and the random suffix of a name made from generateName.
func (o outcome) normalised(generateName string) outcome {
	clean := func(s string) string {
		s = uuid.ReplaceAllString(s, "<uid>")
		if generateName != "" {
			s = regexp.MustCompile(regexp.QuoteMeta(generateName)+`[a-z0-9]{5}`).ReplaceAllString(s, generateName+"<suffix>")
		}
		return s
	}
	o.message = clean(o.message)
	o.setup = clean(o.setup)
	causes := make([]metav1.StatusCause, len(o.causes))
	for i, c := range o.causes {
		causes[i] = metav1.StatusCause{Type: c.Type, Field: c.Field, Message: clean(c.Message)}
	}
	o.causes = causes
	return o.sorted()
}

// sorted is o with its causes in one order, in its message too: the
// validation of a map (labels, annotations) finds its errors in Go's
// random map order, on any server.
func (o outcome) sorted() outcome {
	items := func(causes []metav1.StatusCause) string {
		var s []string
		for _, c := range causes {
			s = append(s, c.Field+": "+c.Message)
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	listed := len(o.causes) > 1 && strings.HasSuffix(o.message, items(o.causes))
	prefix := strings.TrimSuffix(o.message, items(o.causes))
	o.causes = slices.Clone(o.causes)
	slices.SortStableFunc(o.causes, func(a, b metav1.StatusCause) int {
		return strings.Compare(string(a.Type)+a.Field+a.Message, string(b.Type)+b.Field+b.Message)
	})
	if listed {
		o.message = prefix + items(o.causes)
	}
	return o
}

func (s *server) resource(k *kind) dynamic.ResourceInterface {
	r := s.dynamic.Resource(k.gvr)
	if k.namespaced {
		return r.Namespace(testNamespace)
	}
	return r
}

// outcomeOf turns a request's error into what the server answered.
func outcomeOf(err error, success int32) outcome {
	if err == nil {
		return outcome{code: success}
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return outcome{code: -1, message: err.Error()}
	}
	st := status.Status()
	o := outcome{code: st.Code, reason: st.Reason, message: st.Message}
	if st.Details != nil {
		o.causes = st.Details.Causes
	}
	return o
}

func toUnstructured(t *testing.T, k *kind, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(k.gvr.GroupVersion().String())
	u.SetKind(k.kind)
	return u
}

func fromUnstructured(t *testing.T, k *kind, u *unstructured.Unstructured) runtime.Object {
	t.Helper()
	obj := k.empty()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// knownDifference names the reason of a difference the test accepts, ""
// for one it does not. Each is narrow: it explains the difference only
// when the two answers are otherwise the same.
func knownDifference(c testCase, real, fake outcome) string {
	for _, k := range knownDifferences {
		if k.applies(c, real, fake) {
			return k.why
		}
	}
	return ""
}

// knownDifferences are what fakekube does not do, and why.
var knownDifferences = []struct {
	why     string
	applies func(c testCase, real, fake outcome) bool
}{
	{
		why: "the real server's StorageObjectInUseProtection admission gives a new VolumeAttributesClass the kubernetes.io/vac-protection " +
			"finalizer, so a finalizer added by an update comes second; fakekube leaves it out, as no simulated controller would remove it",
		applies: func(c testCase, real, fake outcome) bool {
			return c.kind.kind == "VolumeAttributesClass" && c.op == opUpdate &&
				compare(shifted(real, "metadata.finalizers"), fake) == ""
		},
	},
	{
		why: "the real server stores v1 and events.k8s.io/v1 Events as one resource, so a name taken in one API is taken in the " +
			"other; fakekube keeps them apart",
		applies: func(c testCase, real, fake outcome) bool {
			return c.kind.kind == "Event" && c.op == opCreate && real.reason == metav1.StatusReasonAlreadyExists && fake.code == http.StatusCreated
		},
	},
}

// shifted is o with the items of a list field one place earlier (the
// list having lost its first item), in its message and causes.
func shifted(o outcome, list string) outcome {
	index := regexp.MustCompile(regexp.QuoteMeta(list) + `\[(\d+)\]`)
	shift := func(s string) string {
		return index.ReplaceAllStringFunc(s, func(m string) string {
			n, _ := strconv.Atoi(index.FindStringSubmatch(m)[1])
			return fmt.Sprintf("%s[%d]", list, n-1)
		})
	}
	o.message = shift(o.message)
	causes := make([]metav1.StatusCause, len(o.causes))
	for i, c := range o.causes {
		c.Field = shift(c.Field)
		causes[i] = c
	}
	o.causes = causes
	return o
}
