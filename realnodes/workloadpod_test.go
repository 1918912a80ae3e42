package realnodes

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestWorkloadPod(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		// argsAt is where the first container's args are, nil when the
		// manifest must come back unchanged.
		argsAt []string
		want   []any
	}{{
		name: "pod with a claim, read-only mount",
		manifest: `
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers: [{name: c, image: busybox, volumeMounts: [{name: d, mountPath: /data}, {name: r, mountPath: /ro, readOnly: true}]}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}, {name: r, persistentVolumeClaim: {claimName: ref}}]`,
		argsAt: []string{"spec", "containers"},
		want:   []any{"run", "--volume=/data=data", "--read-only-volume=/ro=ref"},
	}, {
		name: "deployment template",
		manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: c, image: busybox, volumeMounts: [{name: d, mountPath: /data}]}]
      volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]`,
		argsAt: []string{"spec", "template", "spec", "containers"},
		want:   []any{"run", "--volume=/data=data"},
	}, {
		name: "statefulset claim templates are named after the pod",
		manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: c, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
  volumeClaimTemplates: [{metadata: {name: data}}]`,
		argsAt: []string{"spec", "template", "spec", "containers"},
		want:   []any{"run", "--volume=/data=data-$(POD_NAME)"},
	}, {
		name: "generic ephemeral volume",
		manifest: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: c, image: busybox, volumeMounts: [{name: scratch, mountPath: /s}]}]
          volumes: [{name: scratch, ephemeral: {volumeClaimTemplate: {spec: {}}}}]`,
		argsAt: []string{"spec", "jobTemplate", "spec", "template", "spec", "containers"},
		want:   []any{"run", "--volume=/s=$(POD_NAME)-scratch"},
	}, {
		name: "a kind that makes no pods is left alone",
		manifest: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {spec: x}`,
	}, {
		name: "a custom resource named Pod is left alone",
		manifest: `
apiVersion: example.com/v1
kind: Pod
metadata: {name: c}
spec: {containers: [{name: c, image: busybox}]}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tt.manifest), &obj.Object); err != nil {
				t.Fatal(err)
			}
			before := obj.DeepCopy()
			if err := WorkloadPod(obj); err != nil {
				t.Fatal(err)
			}
			if tt.argsAt == nil {
				if !reflect.DeepEqual(obj, before) {
					t.Errorf("changed:\n%v\nwant it unchanged", obj.Object)
				}
				return
			}
			containers, _, _ := unstructured.NestedSlice(obj.Object, tt.argsAt...)
			if len(containers) != 1 {
				t.Fatalf("containers at %v: %v", tt.argsAt, containers)
			}
			c := containers[0].(map[string]any)
			if c["image"] != WorkloadImage || c["imagePullPolicy"] != "Never" {
				t.Errorf("image %v, pull policy %v; want %s, Never", c["image"], c["imagePullPolicy"], WorkloadImage)
			}
			if !reflect.DeepEqual(c["args"], tt.want) {
				t.Errorf("args %v, want %v", c["args"], tt.want)
			}
			env, _ := c["env"].([]any)
			if len(env) != 3 {
				t.Errorf("env %v, want POD_UID, POD_NAME, POD_NAMESPACE", env)
			}
		})
	}
}
