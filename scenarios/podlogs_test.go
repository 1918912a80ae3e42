package scenarios

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
)

// A log check reads pods/log (client-go's fake answers "fake logs") and
// looks at its lines; a log that is not what it waits for fails with what
// it saw.
func TestLogCheck(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		fails      bool
	}{
		{name: "the line", want: "fake logs"},
		{name: "another line", want: "unknown flag: --leader-elect", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, `steps:
  - assert: {object: pod/app, log: app, jsonPath: '{.lines[-1]}', equals: '`+tc.want+`'}
`)
			cluster := newFakeCluster(clock.RealClock{})
			cluster.objects.core = fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}})
			r := &Runner{Backend: fakeBackend{}}
			_, err := r.run(context.Background(), s, cluster.objects)
			switch {
			case tc.fails && (err == nil || !strings.Contains(err.Error(), "the log of container app of pod/app {.lines[-1]} == "+tc.want)):
				t.Fatalf("error %v, want the log check's failure", err)
			case !tc.fails && err != nil:
				t.Fatal(err)
			}
		})
	}
}

// log: names a container of a pod; what does not apply to a log is
// refused where it is written.
func TestLogCheckParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"log of something else than a pod", `steps:
  - wait:
      object: pvc/data
      log: app
`, "x.yaml:4: step 1 (wait): log: applies to a pod (object: pod/NAME)"},
		{"count on a log", `steps:
  - wait:
      object: pod/app
      jsonPath: '{.lines[0]}'
      log: app
      count: 1
`, "x.yaml:6: step 1 (wait): count does not apply to a log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.src), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
