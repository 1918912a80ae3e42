package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/trace"
	"github.com/csisim/csisim/trace/htmltest"
)

var _ = Describe("csisim run --format and --html", func() {
	const basic = "../../scenarios/library/basic-lifecycle.yaml"
	// runFormat runs basic-lifecycle with seed 3 and the flags, and returns
	// its stdout and the page --html wrote, if asked.
	runFormat := func(args ...string) (stdout, stderr string, page []byte) {
		tmp := GinkgoT().TempDir()
		html := filepath.Join(GinkgoT().TempDir(), "timeline.html")
		s := start(tmp, append(append([]string{"run", "--seed", "3", "--html", html}, args...), basic)...)
		Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
		expectNothingLeftIn(tmp)
		page, err := os.ReadFile(html)
		Expect(err).NotTo(HaveOccurred())
		return string(s.Out.Contents()), string(s.Err.Contents()), page
	}

	It("prints JSON Lines that read back, and the same bytes for the same seed, the HTML page too", func() {
		out, errOut, page := runFormat("--format", "json")
		// stdout holds only the timeline; the lines about the run go to stderr.
		Expect(errOut).To(ContainSubstring("PASSED"))
		Expect(out).NotTo(ContainSubstring("PASSED"))
		Expect(out).NotTo(ContainSubstring("/csisim-run-"), "the run's directory is left in")
		tl, err := trace.ReadJSON(strings.NewReader(out))
		Expect(err).NotTo(HaveOccurred())
		Expect(len(tl.Entries)).To(Equal(strings.Count(out, "\n")))
		var claim *corev1.PersistentVolumeClaim
		var stage *trace.CSICall
		for _, e := range tl.Entries {
			if e.Write != nil {
				if c, ok := e.Write.Object.(*corev1.PersistentVolumeClaim); ok && claim == nil {
					claim = c
				}
			}
			if e.Call != nil && e.Verb == "NodeStageVolume" {
				stage = e.Call
			}
		}
		Expect(claim).NotTo(BeNil(), "no PersistentVolumeClaim object in the JSON timeline")
		Expect(claim.Name).To(Equal("data"))
		Expect(stage).NotTo(BeNil())
		Expect(stage.StagingPath).To(HavePrefix(trace.RootWord + "/"))

		// --quiet keeps only the text timeline from being printed as it
		// happens: the JSON is still printed, the same.
		again, _, pageAgain := runFormat("--quiet", "--format", "json")
		Expect(again).To(Equal(out), "the same seed (with --quiet) gave another JSON timeline")
		Expect(bytes.Equal(pageAgain, page)).To(BeTrue(), "the same seed gave another HTML page")
	})

	It("prints a Mermaid sequence diagram, the same for the same seed", func() {
		out, _, _ := runFormat("--format", "mermaid")
		Expect(out).To(HavePrefix("sequenceDiagram\n"))
		Expect(out).To(MatchRegexp(`(?m)^    participant L\d+ as API server$`))
		Expect(out).To(MatchRegexp(`(?m)^    participant L\d+ as CSI node plugin node-1$`))
		Expect(out).To(MatchRegexp(`(?m)^    L\d+->>L\d+: #35;\d+ \+[0-9.]+s NodeStageVolume `))
		again, _, _ := runFormat("--format", "mermaid")
		Expect(again).To(Equal(out))
	})

	It("writes a page that Chromium shows with a lane per component and a row per entry", func() {
		htmltest.Chromium(GinkgoT())
		out, _, page := runFormat("--quiet")
		Expect(out).To(ContainSubstring("PASSED"))
		file := filepath.Join(GinkgoT().TempDir(), "timeline.html")
		Expect(os.WriteFile(file, page, 0o644)).To(Succeed())
		doc := htmltest.DOM(GinkgoT(), "file://"+file, 0)
		var lanes []string
		for _, h := range htmltest.All(doc, "lane-head") {
			lanes = append(lanes, htmltest.Text(h))
		}
		Expect(lanes).To(ContainElements("scenario", "API server", "external-provisioner", "external-attacher",
			"kubelet:node-1", "CSI controller plugin", "CSI node plugin node-1"))
		var kinds []string
		for _, r := range htmltest.All(doc, "row") {
			kinds = append(kinds, htmltest.Attr(r, "data-kind")+" "+htmltest.Text(r))
		}
		Expect(kinds).To(ContainElement(MatchRegexp(`^CSI \+[0-9.]+s#\d+ CreateVolume `)))
		Expect(kinds).To(ContainElement(MatchRegexp(`^STEP `)))
		Expect(htmltest.Text(htmltest.ByID(doc, "count"))).To(MatchRegexp(`^(\d+) of (\d+) entries$`))
	})

	It("refuses what it cannot do", func() {
		for _, args := range [][]string{
			{"--format", "xml"},
			{"--format", "json", "--seeds", "1..2"},
			{"--html", "x.html", "--seeds", "1..2"},
		} {
			s := start(GinkgoT().TempDir(), append(append([]string{"run"}, args...), basic)...)
			Eventually(s, time.Minute).Should(gexec.Exit(2), "csisim run %v", args)
		}
	})
})

var _ = Describe("csisim serve's live timeline", func() {
	It("serves the page beside the API server, and the page follows the cluster", func() {
		tmp := GinkgoT().TempDir()
		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		server := start(tmp, "serve", "--quiet", "--kubeconfig", kubeconfig)
		DeferCleanup(func() {
			server.Interrupt()
			Eventually(server, time.Minute).Should(gexec.Exit(0))
			expectNothingLeftIn(tmp)
		})
		Eventually(server.Out, time.Minute).Should(gbytes.Say(`timeline at (http://127\.0\.0\.1:\d+/csisim/timeline)\n`))
		url := regexp.MustCompile(`timeline at (\S+)`).FindStringSubmatch(string(server.Out.Contents()))[1]
		base := strings.TrimSuffix(url, "/csisim/timeline")

		get := func(u string) (int, string) {
			resp, err := http.Get(u)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, string(body)
		}
		// The API server's routes are as they were.
		code, body := get(base + "/api/v1/namespaces")
		Expect(code).To(Equal(http.StatusOK))
		Expect(body).To(ContainSubstring(`"kind":"NamespaceList"`))
		code, _ = get(base + "/csisim/timeline/data?after=x")
		Expect(code).To(Equal(http.StatusBadRequest))

		// A claim made now reaches the page's data.
		postClaim(base)
		Eventually(func() []string {
			_, body := get(base + "/csisim/timeline/data?after=0")
			var page struct {
				Records []struct {
					Keys []string `json:"keys"`
				} `json:"records"`
			}
			Expect(json.Unmarshal([]byte(body), &page)).To(Succeed())
			var keys []string
			for _, r := range page.Records {
				keys = append(keys, r.Keys...)
			}
			return keys
		}, time.Minute, 200*time.Millisecond).Should(ContainElement(HavePrefix("volume pvc-")))

		htmltest.Chromium(GinkgoT())
		// The page as Chromium builds it, after it has polled a while.
		doc := htmltest.DOM(GinkgoT(), url+"#subject=claim%20default%2Fdata", 3*time.Second)
		Expect(htmltest.Text(htmltest.ByID(doc, "live-status"))).To(MatchRegexp(`^live: updated at entry #\d+$`))
		var lanes []string
		for _, h := range htmltest.All(doc, "lane-head") {
			lanes = append(lanes, htmltest.Text(h))
		}
		Expect(lanes).To(ContainElements("API server", "external-provisioner", "CSI controller plugin"))
		var shown []string
		for _, r := range htmltest.All(doc, "row") {
			if !htmltest.HasAttr(r, "hidden") {
				shown = append(shown, htmltest.Text(r))
			}
		}
		Expect(shown).NotTo(BeEmpty())
		Expect(slices.ContainsFunc(shown, func(s string) bool { return strings.Contains(s, "CreateVolume pvc-") })).To(BeTrue(),
			"the claim's CreateVolume is not among the rows shown: %q", shown)
		Expect(slices.ContainsFunc(shown, func(s string) bool { return strings.Contains(s, "CSIDriver") })).To(BeFalse(),
			"rows of other objects show with the claim chosen")
	})
})

var _ = Describe("csisim serve's live timeline of a call that hangs", func() {
	It("shows the call in flight from when it was sent", func() {
		tmp := GinkgoT().TempDir()
		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		server := start(tmp, "serve", "--quiet", "--kubeconfig", kubeconfig)
		DeferCleanup(func() {
			server.Interrupt()
			Eventually(server, time.Minute).Should(gexec.Exit(0))
			expectNothingLeftIn(tmp)
		})
		Eventually(server.Out, time.Minute).Should(gbytes.Say(`timeline at (http://127\.0\.0\.1:\d+/csisim/timeline)\n`))
		url := regexp.MustCompile(`timeline at (\S+)`).FindStringSubmatch(string(server.Out.Contents()))[1]
		base := strings.TrimSuffix(url, "/csisim/timeline")
		hang := start(tmp, "fault", "--kubeconfig", kubeconfig, "csi-hang", "method=NodeStageVolume")
		Eventually(hang, time.Minute).Should(gexec.Exit(0))
		postClaim(base)
		pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"app"},"spec":{"containers":[{"name":"app","image":"busybox",` +
			`"volumeMounts":[{"name":"data","mountPath":"/data"}]}],"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data"}}]}}`
		resp, err := http.Post(base+"/api/v1/namespaces/default/pods", "application/json", strings.NewReader(pod))
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusCreated))

		// The data has the call in flight, and the start-up folded.
		Eventually(func() []string {
			resp, err := http.Get(base + "/csisim/timeline/data?after=0")
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			var page struct {
				StartUp  int `json:"startUp"`
				InFlight []struct {
					Label string `json:"label"`
				} `json:"inFlight"`
			}
			Expect(json.NewDecoder(resp.Body).Decode(&page)).To(Succeed())
			Expect(page.StartUp).To(BeNumerically(">", 0))
			var labels []string
			for _, r := range page.InFlight {
				labels = append(labels, r.Label)
			}
			return labels
		}, time.Minute, 200*time.Millisecond).Should(ContainElement(MatchRegexp(`^NodeStageVolume \S+: sent at \+[0-9.]+s, in flight$`)))

		htmltest.Chromium(GinkgoT())
		doc := htmltest.DOM(GinkgoT(), url, 3*time.Second)
		var inFlight []string
		for _, r := range htmltest.All(doc, "row") {
			if htmltest.Attr(r, "data-sent") == "in-flight" && !htmltest.HasAttr(r, "hidden") {
				inFlight = append(inFlight, htmltest.Text(r))
			}
		}
		Expect(inFlight).To(ContainElement(ContainSubstring("NodeStageVolume")))
		Expect(htmltest.Text(htmltest.ByID(doc, "verdict-items"))).To(ContainSubstring("in flight: NodeStageVolume"))
	})
})

// postClaim creates a claim "data" in the default namespace through the
// API server.
func postClaim(base string) {
	body := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},` +
		`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`
	resp, err := http.Post(base+"/api/v1/namespaces/default/persistentvolumeclaims", "application/json", strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusCreated))
}
