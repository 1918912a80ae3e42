package fakekube

import (
	"runtime"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// KubernetesVersion is the version of the real API server whose behaviour
// this server follows.
const KubernetesVersion = "v1.37.2"

func serverVersion() *version.Info {
	return &version.Info{
		Major:        "1",
		Minor:        "37",
		GitVersion:   KubernetesVersion + "+csisim",
		GitTreeState: "clean",
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     runtime.GOOS + "/" + runtime.GOARCH,
	}
}

func (s *Server) coreVersions() *metav1.APIVersions {
	return &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: "127.0.0.1"},
		},
	}
}

func (s *Server) groupList() *metav1.APIGroupList {
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, gv := range s.reg.groupVersions() {
		if gv.Group == "" {
			continue
		}
		g, _ := s.group(gv.Group)
		list.Groups = append(list.Groups, *g)
	}
	return list
}

func (s *Server) group(name string) (*metav1.APIGroup, bool) {
	var versions []metav1.GroupVersionForDiscovery
	for _, gv := range s.reg.groupVersions() {
		if gv.Group == name && name != "" {
			versions = append(versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
		}
	}
	if len(versions) == 0 {
		return nil, false
	}
	return &metav1.APIGroup{
		TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:             name,
		Versions:         versions,
		PreferredVersion: versions[0],
	}, true
}

var (
	objectVerbs   = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	subStatusVerb = metav1.Verbs{"get", "patch", "update"}
)

func (s *Server) resourceList(gv schema.GroupVersion) (*metav1.APIResourceList, bool) {
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, r := range s.reg.all {
		if r.gvr.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:         r.gvr.Resource,
			SingularName: r.singularName(),
			Namespaced:   r.namespaced,
			Kind:         r.kind,
			Verbs:        objectVerbs,
			ShortNames:   r.shortNames,
			Categories:   r.categories,
		})
		if r.hasStatus {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: r.gvr.Resource + "/status", Namespaced: r.namespaced, Kind: r.kind, Verbs: subStatusVerb,
			})
		}
		for _, sub := range r.subresources {
			ar := metav1.APIResource{Name: r.gvr.Resource + "/" + sub, Namespaced: r.namespaced, Kind: "Binding", Verbs: metav1.Verbs{"create"}}
			switch sub {
			case "token":
				ar.Group, ar.Version, ar.Kind = "authentication.k8s.io", "v1", "TokenRequest"
			case "log":
				ar.Kind, ar.Verbs = r.kind, metav1.Verbs{"get"}
			case "proxy":
				ar.Kind, ar.Verbs = "NodeProxyOptions", metav1.Verbs{"create", "delete", "get", "patch", "update"}
			}
			list.APIResources = append(list.APIResources, ar)
		}
	}
	if len(list.APIResources) == 0 {
		return nil, false
	}
	sort.SliceStable(list.APIResources, func(i, j int) bool { return list.APIResources[i].Name < list.APIResources[j].Name })
	return list, true
}
