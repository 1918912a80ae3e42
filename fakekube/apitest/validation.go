package apitest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// httpAnswer is a server's answer to a plain HTTP request: its status
// code and, for a refusal, the metav1.Status it sent.
type httpAnswer struct {
	code   int
	status metav1.Status
	body   string
}

// do sends one request over plain HTTP (path from the server's root) and
// reads the answer.
func (e *env) do(t *testing.T, method, path, contentType string, body []byte) httpAnswer {
	t.Helper()
	client, err := rest.HTTPClientFor(e.target.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, strings.TrimSuffix(e.target.Config.Host, "/")+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := httpAnswer{code: resp.StatusCode, body: string(raw)}
	if resp.StatusCode >= 300 {
		_ = json.Unmarshal(raw, &a.status)
	}
	return a
}

// refusal is a request the real server refuses, and its exact answer.
type refusal struct {
	name, method, path, body string
	code                     int
	message                  string
}

func (e *env) expectRefusals(t *testing.T, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct := "application/json"
			if tc.method == http.MethodPatch {
				ct = string(types.MergePatchType)
			}
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			a := e.do(t, tc.method, tc.path, ct, body)
			if a.code != tc.code || a.status.Message != tc.message {
				t.Errorf("%s %s: %d %q\nwant %d %q", tc.method, tc.path, a.code, a.status.Message, tc.code, tc.message)
			}
		})
	}
}

// fieldValidation creates objects whose fields the real server's
// validation refuses (422, each message as it words it): sizes that are
// not positive, values outside an enumeration, a CSI volume without a
// driver or handle, a VolumeAttachment without exactly one source, and
// ConfigMap and Secret data over 1 MiB.
func fieldValidation(t *testing.T, e *env) {
	claims := "/api/v1/namespaces/" + e.ns + "/persistentvolumeclaims"
	claim := func(name, spec string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":%q},"spec":{%s}}`, name, spec)
	}
	pv := func(name, spec string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":%q},"spec":{"capacity":{"storage":"1Gi"},%s}}`, name, spec)
	}
	storage := func(kind, name, rest string) string {
		return fmt.Sprintf(`{"apiVersion":"storage.k8s.io/v1","kind":%q,"metadata":{"name":%q},%s}`, kind, name, rest)
	}
	const rwo, csi = `"accessModes":["ReadWriteOnce"]`, `"csi":{"driver":"apitest.example.com","volumeHandle":"h"}`
	size := func(s string) string { return fmt.Sprintf(`"resources":{"requests":{"storage":%q}}`, s) }
	big := strings.Repeat("x", 1100<<10)
	n := e.name
	e.expectRefusals(t, []refusal{
		{"claim of negative size", "POST", claims, claim("neg", rwo+","+size("-1Gi")), 422,
			`PersistentVolumeClaim "neg" is invalid: spec.resources[storage]: Invalid value: "-1Gi": must be greater than zero`},
		{"claim of size zero", "POST", claims, claim("zero", rwo+","+size("0")), 422,
			`PersistentVolumeClaim "zero" is invalid: spec.resources[storage]: Invalid value: "0": must be greater than zero`},
		{"claim with an unknown access mode", "POST", claims, claim("mode", `"accessModes":["ReadWriteSometimes"],`+size("1Gi")), 422,
			`PersistentVolumeClaim "mode" is invalid: spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`},
		{"claim with an unknown volume mode", "POST", claims, claim("vm", rwo+`,"volumeMode":"Sideways",`+size("1Gi")), 422,
			`PersistentVolumeClaim "vm" is invalid: spec.volumeMode: Unsupported value: "Sideways": supported values: "Block", "Filesystem"`},
		{"CSI volume without a handle", "POST", "/api/v1/persistentvolumes", pv(n("nohandle"), rwo+`,"csi":{"driver":"apitest.example.com"}`), 422,
			fmt.Sprintf(`PersistentVolume %q is invalid: spec.csi.volumeHandle: Required value`, n("nohandle"))},
		{"CSI volume without a driver", "POST", "/api/v1/persistentvolumes", pv(n("nodriver"), rwo+`,"csi":{"volumeHandle":"h"}`), 422,
			fmt.Sprintf(`PersistentVolume %q is invalid: spec.csi.driver: Required value`, n("nodriver"))},
		{"volume with an unknown reclaim policy", "POST", "/api/v1/persistentvolumes", pv(n("policy"), rwo+`,"persistentVolumeReclaimPolicy":"Keep",`+csi), 422,
			fmt.Sprintf(`PersistentVolume %q is invalid: spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"`, n("policy"))},
		{"volume of size zero", "POST", "/api/v1/persistentvolumes", strings.Replace(pv(n("zero"), rwo+","+csi), `"1Gi"`, `"0"`, 1), 422,
			fmt.Sprintf(`PersistentVolume %q is invalid: spec.capacity[storage]: Invalid value: "0": must be greater than zero`, n("zero"))},
		{"volume of negative size", "POST", "/api/v1/persistentvolumes", strings.Replace(pv(n("neg"), rwo+","+csi), `"1Gi"`, `"-1Gi"`, 1), 422,
			fmt.Sprintf(`PersistentVolume %q is invalid: [spec.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity, `+
				`spec.capacity[storage]: Invalid value: "-1Gi": must be greater than zero]`, n("neg"))},
		{"volume with an unknown volume mode", "POST", "/api/v1/persistentvolumes", pv(n("vm"), rwo+`,"volumeMode":"Sideways",`+csi), 422,
			fmt.Sprintf(`PersistentVolume %q is invalid: spec.volumeMode: Unsupported value: "Sideways": supported values: "Block", "Filesystem"`, n("vm"))},
		{"volume with an unknown access mode", "POST", "/api/v1/persistentvolumes", pv(n("pvmode"), `"accessModes":["ReadWriteSometimes"],`+csi), 422,
			fmt.Sprintf(`PersistentVolume %q is invalid: spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`, n("pvmode"))},
		{"class with an unknown reclaim policy", "POST", "/apis/storage.k8s.io/v1/storageclasses",
			storage("StorageClass", n("policy"), `"provisioner":"apitest.example.com","reclaimPolicy":"Keep"`), 422,
			fmt.Sprintf(`StorageClass.storage.k8s.io %q is invalid: reclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Retain"`, n("policy"))},
		{"class with an unknown binding mode", "POST", "/apis/storage.k8s.io/v1/storageclasses",
			storage("StorageClass", n("binding"), `"provisioner":"apitest.example.com","volumeBindingMode":"Later"`), 422,
			fmt.Sprintf(`StorageClass.storage.k8s.io %q is invalid: volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"`, n("binding"))},
		{"attachment without a source", "POST", "/apis/storage.k8s.io/v1/volumeattachments",
			storage("VolumeAttachment", n("nosrc"), `"spec":{"attacher":"apitest.example.com","nodeName":"n1","source":{}}`), 422,
			fmt.Sprintf(`VolumeAttachment.storage.k8s.io %q is invalid: spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName`, n("nosrc"))},
		{"attachment with two sources", "POST", "/apis/storage.k8s.io/v1/volumeattachments",
			storage("VolumeAttachment", n("twosrc"), `"spec":{"attacher":"apitest.example.com","nodeName":"n1","source":{"persistentVolumeName":"pv1","inlineVolumeSpec":{"csi":{"driver":"d","volumeHandle":"h"}}}}`), 422,
			fmt.Sprintf(`VolumeAttachment.storage.k8s.io %q is invalid: spec.source: Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName`, n("twosrc"))},
		{"driver with an unknown fsGroupPolicy", "POST", "/apis/storage.k8s.io/v1/csidrivers",
			storage("CSIDriver", n("fsg")+".example.com", `"spec":{"fsGroupPolicy":"Sometimes"}`), 422,
			fmt.Sprintf(`CSIDriver.storage.k8s.io %q is invalid: spec.fsGroupPolicy: Unsupported value: "Sometimes": supported values: "File", "None", "ReadWriteOnceWithFSType"`, n("fsg")+".example.com")},
		{"driver with an unknown lifecycle mode", "POST", "/apis/storage.k8s.io/v1/csidrivers",
			storage("CSIDriver", n("modes")+".example.com", `"spec":{"volumeLifecycleModes":["Forever"]}`), 422,
			fmt.Sprintf(`CSIDriver.storage.k8s.io %q is invalid: spec.volumeLifecycleModes: Unsupported value: "Forever": supported values: "Persistent", "Ephemeral"`, n("modes")+".example.com")},
		{"ConfigMap over 1 MiB", "POST", "/api/v1/namespaces/" + e.ns + "/configmaps",
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":%q}}`, big), 422,
			`ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes`},
		{"Secret over 1 MiB", "POST", "/api/v1/namespaces/" + e.ns + "/secrets",
			fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"big"},"data":{"a":%q}}`, base64.StdEncoding.EncodeToString([]byte(big))), 422,
			`Secret "big" is invalid: data: Too long: may not be more than 1048576 bytes`},
		{"body over 3 MiB", "POST", "/api/v1/namespaces/" + e.ns + "/configmaps",
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge"},"data":{"a":%q}}`, strings.Repeat("x", 3200<<10)), 413,
			`Request entity too large: limit is 3145728`},
	})
}

// updatesAreDefaulted writes back a claim whose body omits what defaulting
// fills in (spec.volumeMode): the server defaults the update's body as it
// did the create's, so the write is no change of an immutable field.
func updatesAreDefaulted(t *testing.T, e *env) {
	pvcs := e.cs.CoreV1().PersistentVolumeClaims(e.ns)
	created, err := pvcs.Create(e.ctx, claim(e.ns, "defaulted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.VolumeMode == nil || *created.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Fatalf("created claim's volumeMode %v, want Filesystem", created.Spec.VolumeMode)
	}
	c := created.DeepCopy()
	c.Spec.VolumeMode = nil
	metav1.SetMetaDataLabel(&c.ObjectMeta, "apitest", "updated")
	updated, err := pvcs.Update(e.ctx, c, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating a claim whose body omits volumeMode: %v", err)
	}
	if updated.Spec.VolumeMode == nil || *updated.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("updated claim's volumeMode %v, want Filesystem", updated.Spec.VolumeMode)
	}
	// A real change of the mode: the message carries a unified diff of
	// the spec as the server's internal type prints as JSON.
	e.expectRefusals(t, []refusal{{"claim volume mode", "PATCH", "/api/v1/namespaces/" + e.ns + "/persistentvolumeclaims/defaulted",
		`{"spec":{"volumeMode":"Block"}}`, 422,
		`PersistentVolumeClaim "defaulted" is invalid: [spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims` + "\n" +
			"@@ -11,7 +11,7 @@\n" +
			"  },\n" +
			`  "VolumeName": "",` + "\n" +
			`  "StorageClassName": "apitest-none",` + "\n" +
			`- "VolumeMode": "Filesystem",` + "\n" +
			`+ "VolumeMode": "Block",` + "\n" +
			`  "DataSource": null,` + "\n" +
			`  "DataSourceRef": null,` + "\n" +
			`  "VolumeAttributesClassName": null` + "\n" +
			`, volumeMode: Invalid value: "Block": field is immutable]`}})
}

// storageImmutability changes the fields of a StorageClass and a
// PersistentVolume the real server keeps as they were created (422, in
// its words: the storage group's declarative validation names no value),
// and those it lets change.
func storageImmutability(t *testing.T, e *env) {
	scName, pvName := e.name("immutable"), e.name("immutable")
	scs, pvs := e.cs.StorageV1().StorageClasses(), e.cs.CoreV1().PersistentVolumes()
	if _, err := scs.Create(e.ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: scName},
		Provisioner: "apitest.example.com"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = scs.Delete(e.ctx, scName, metav1.DeleteOptions{}) })
	pv := fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":%q},"spec":{"capacity":{"storage":"1Gi"},`+
		`"accessModes":["ReadWriteOnce"],"csi":{"driver":"apitest.example.com","volumeHandle":"h"}}}`, pvName)
	if a := e.do(t, "POST", "/api/v1/persistentvolumes", "application/json", []byte(pv)); a.code != http.StatusCreated {
		t.Fatalf("creating volume %s: %d %s", pvName, a.code, a.body)
	}
	t.Cleanup(func() { _ = pvs.Delete(e.ctx, pvName, metav1.DeleteOptions{}) })

	sc := "/apis/storage.k8s.io/v1/storageclasses/" + scName
	scInvalid := fmt.Sprintf(`StorageClass.storage.k8s.io %q is invalid: `, scName)
	e.expectRefusals(t, []refusal{
		{"class binding mode", "PATCH", sc, `{"volumeBindingMode":"WaitForFirstConsumer"}`, 422,
			scInvalid + "volumeBindingMode: Invalid value: null: field is immutable"},
		{"class reclaim policy", "PATCH", sc, `{"reclaimPolicy":"Retain"}`, 422,
			scInvalid + "reclaimPolicy: Invalid value: null: field is immutable"},
		{"class, four fields at once", "PATCH", sc,
			`{"provisioner":"other.example.com","parameters":{"a":"b"},"reclaimPolicy":"Retain","volumeBindingMode":"WaitForFirstConsumer"}`, 422,
			scInvalid + "[provisioner: Invalid value: null: field is immutable, parameters: Invalid value: null: field is immutable, " +
				"reclaimPolicy: Invalid value: null: field is immutable, volumeBindingMode: Invalid value: null: field is immutable]"},
		{"volume mode", "PATCH", "/api/v1/persistentvolumes/" + pvName, `{"spec":{"volumeMode":"Block"}}`, 422,
			fmt.Sprintf(`PersistentVolume %q is invalid: volumeMode: Invalid value: "Block": field is immutable`, pvName)},
		{"volume source", "PATCH", "/api/v1/persistentvolumes/" + pvName, `{"spec":{"csi":{"volumeHandle":"other"}}}`, 422,
			fmt.Sprintf(`PersistentVolume %q is invalid: spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation`, pvName) + "\n" +
				"@@ -22,7 +22,7 @@\n" +
				`  "StorageOS": null,` + "\n" +
				`  "CSI": {` + "\n" +
				`   "Driver": "apitest.example.com",` + "\n" +
				`-  "VolumeHandle": "h",` + "\n" +
				`+  "VolumeHandle": "other",` + "\n" +
				`   "ReadOnly": false,` + "\n" +
				`   "FSType": "",` + "\n" +
				`   "VolumeAttributes": null,` + "\n"},
		// An update is validated as a create is.
		{"volume, unknown reclaim policy", "PATCH", "/api/v1/persistentvolumes/" + pvName, `{"spec":{"persistentVolumeReclaimPolicy":"Keep"}}`, 422,
			fmt.Sprintf(`PersistentVolume %q is invalid: spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"`, pvName)},
		{"class, unknown binding mode", "PATCH", sc, `{"volumeBindingMode":"Later"}`, 422,
			scInvalid + `[volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer", volumeBindingMode: Invalid value: null: field is immutable]`},
	})
	for _, tc := range []struct{ path, patch string }{
		{sc, `{"mountOptions":["ro"]}`},
		{sc, `{"allowedTopologies":[{"matchLabelExpressions":[{"key":"a","values":["b"]}]}]}`},
		{sc, `{"allowVolumeExpansion":true}`},
		{"/api/v1/persistentvolumes/" + pvName, `{"spec":{"persistentVolumeReclaimPolicy":"Delete","mountOptions":["ro"],"storageClassName":"x"}}`},
	} {
		if a := e.do(t, "PATCH", tc.path, string(types.MergePatchType), []byte(tc.patch)); a.code != http.StatusOK {
			t.Errorf("patch %s of %s: %d %s, want 200", tc.patch, tc.path, a.code, a.status.Message)
		}
	}
}

// systemNamespacesStay deletes the namespaces the NamespaceLifecycle
// admission plugin protects: 403 each, and they stay.
func systemNamespacesStay(t *testing.T, e *env) {
	for _, ns := range []string{"default", "kube-system", "kube-public"} {
		err := e.cs.CoreV1().Namespaces().Delete(e.ctx, ns, metav1.DeleteOptions{})
		want := fmt.Sprintf(`namespaces %q is forbidden: this namespace may not be deleted`, ns)
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("deleting namespace %s: %v\nwant 403 %q", ns, err, want)
		}
		got, err := e.cs.CoreV1().Namespaces().Get(e.ctx, ns, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp != nil {
			t.Errorf("namespace %s after a refused deletion: %v %v", ns, err, got)
		}
	}
}

// badQueryParameters reads with query parameters the real server refuses:
// a resourceVersion that is no number (400 on a list; 500 without a
// reason on a get or a watch, the storage layer's error as it is), a
// continue token it cannot decode (400), integers that are not (400).
func badQueryParameters(t *testing.T, e *env) {
	cms := "/api/v1/namespaces/" + e.ns + "/configmaps"
	notANumber := `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`
	badBase64 := "invalid continue token: continue key is not valid: illegal base64 data at input byte 4"
	e.expectRefusals(t, []refusal{
		{"get, resourceVersion not a number", "GET", cms + "/absent?resourceVersion=abc", "", 500, notANumber},
		{"list, resourceVersion not a number", "GET", cms + "?resourceVersion=abc", "", 400, "invalid resource version: " + notANumber},
		{"watch, resourceVersion not a number", "GET", cms + "?watch=true&resourceVersion=abc", "", 500, notANumber},
		{"list, continue not base64", "GET", cms + "?limit=1&continue=bogus", "", 400, badBase64},
		{"list, continue before resourceVersion", "GET", cms + "?continue=bogus&resourceVersion=abc", "", 400, badBase64},
		{"list, continue not JSON", "GET", cms + "?continue=" + base64.RawURLEncoding.EncodeToString([]byte("notjson")), "", 400,
			"invalid continue token: continue key is not valid: invalid character 'o' in literal null (expecting 'u')"},
		{"list, continue of another version", "GET", cms + "?continue=" + base64.RawURLEncoding.EncodeToString([]byte(`{"v":"x"}`)), "", 400,
			"invalid continue token: continue key is not valid: server does not recognize this encoded version x"},
		{"list, resourceVersionMatch unknown", "GET", cms + "?resourceVersionMatch=Bogus&resourceVersion=abc", "", 422,
			`ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""`},
		{"list, resourceVersionMatch without resourceVersion", "GET", cms + "?resourceVersionMatch=Bogus", "", 422,
			`ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, ` +
				`resourceVersionMatch: Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""]`},
		{"list, Exact at resourceVersion 0", "GET", cms + "?resourceVersionMatch=Exact&resourceVersion=0", "", 422,
			`ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`},
		{"watch, resourceVersionMatch Exact", "GET", cms + "?watch=true&resourceVersionMatch=Exact&resourceVersion=5", "", 422,
			`ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided, ` +
				`resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]`},
		{"list, limit not a number", "GET", cms + "?limit=abc", "", 400, `strconv.ParseInt: parsing "abc": invalid syntax`},
		{"list, timeoutSeconds not a number", "GET", cms + "?timeoutSeconds=abc", "", 400, `strconv.ParseInt: parsing "abc": invalid syntax`},
		{"watch, timeoutSeconds not a number", "GET", cms + "?watch=true&timeoutSeconds=abc", "", 400, `strconv.ParseInt: parsing "abc": invalid syntax`},
		{"delete, gracePeriodSeconds not a number", "DELETE", cms + "/absent?gracePeriodSeconds=abc", "", 400, `strconv.ParseInt: parsing "abc": invalid syntax`},
	})
}

// etcdSizeLimit creates pods around etcd's 1.5 MiB request limit, which
// no field validation of a pod guards: 1.3 MiB of environment is stored,
// 1.7 MiB is refused by etcd, 500 with its words and no reason.
func etcdSizeLimit(t *testing.T, e *env) {
	pods := e.cs.CoreV1().Pods(e.ns)
	withEnv := func(name string, kib int) *corev1.Pod {
		p := unscheduledPod(e.ns, name)
		for i := 0; i < kib/100; i++ {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env,
				corev1.EnvVar{Name: fmt.Sprintf("E%d", i), Value: strings.Repeat("x", 100<<10)})
		}
		return p
	}
	if _, err := pods.Create(e.ctx, withEnv("fits", 1300), metav1.CreateOptions{}); err != nil {
		t.Errorf("a pod of 1.3 MiB: %v", err)
	}
	_, err := pods.Create(e.ctx, withEnv("toolarge", 1700), metav1.CreateOptions{})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusInternalServerError ||
		status.Status().Reason != metav1.StatusReasonUnknown || err.Error() != "etcdserver: request is too large" {
		t.Errorf("a pod of 1.7 MiB: %v, want 500 %q", err, "etcdserver: request is too large")
	}
}
