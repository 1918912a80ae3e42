package kubelet

// The node's and its pods' network: the addresses the Node reports (as
// kubernetes pkg/kubelet/nodestatus/setters.go NodeAddress does without a
// cloud provider), the hostIP its pods report, and the address each pod's
// sandbox gets — what the CNI plugin's host-local IPAM does on a real node
// (csisim's real nodes' plugin hands them out the same way).

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// defaultPodSubnet is where pods get their addresses when the cluster
// gives the node no subnet: containerd's default CNI bridge network.
const defaultPodSubnet = "10.88.0.0/16"

// NodeNetwork is the network of a cluster's node by its index: its
// InternalIP, in the way of kind's nodes (172.18.0.2 and on, counting on
// into 172.18.1.0 past 172.18.0.255 for a thousand-node cluster), and the
// subnet its pods get their addresses from, the one csisim's real nodes'
// CNI plugin gives the same node (10.88.1.0/24 and on, realnodes; then
// 10.89.0.0/24 and on).
func NodeNetwork(index int) (nodeIP, podSubnet string) {
	node := ipv4Plus(netip.AddrFrom4([4]byte{172, 18, 0, 2}), uint32(index))
	pods := ipv4Plus(netip.AddrFrom4([4]byte{10, 88, 1, 0}), uint32(index)<<8)
	return node.String(), netip.PrefixFrom(pods, 24).String()
}

// ipv4Plus is the IPv4 address n after a.
func ipv4Plus(a netip.Addr, n uint32) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += n
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// nodeAddresses are the addresses the Node reports: the InternalIP, then
// the hostname, as a kubelet without a cloud provider reports them.
func (k *Kubelet) nodeAddresses() []corev1.NodeAddress {
	var out []corev1.NodeAddress
	if k.cfg.NodeIP != "" {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: k.cfg.NodeIP})
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: k.cfg.NodeName})
}

// hostIP is the node's address its pods report: its InternalIP, else its
// ExternalIP; none if the Node has neither (as the real kubelet, which
// then leaves it out).
func (k *Kubelet) hostIP() string {
	node, err := k.nodes.Get(k.cfg.NodeName)
	if err != nil {
		return ""
	}
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, a := range node.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
	}
	return ""
}

// sandboxIP is the address of the pod's sandbox: the one it has, else the
// lowest free one of the node's pod subnet after the network and gateway
// addresses, as csisim's CNI plugin gives them out on real nodes. An
// address is free when no pod here has it.
func (k *Kubelet) sandboxIP(pod *corev1.Pod) (netip.Addr, error) {
	if a, err := netip.ParseAddr(pod.Status.PodIP); err == nil {
		return a, nil
	}
	pods := k.forgetGonePods()
	var taken []netip.Addr
	for _, p := range pods {
		if a, err := netip.ParseAddr(p.Status.PodIP); err == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			taken = append(taken, a)
		}
	}
	subnet := k.cfg.PodSubnet
	if subnet == "" {
		subnet = defaultPodSubnet
	}
	return k.allocateIP(pod.UID, subnet, taken)
}

// allocateIP gives the pod the lowest address of subnet that is neither
// given to another pod nor taken, unless it has one.
func (k *Kubelet) allocateIP(uid types.UID, subnet string, taken []netip.Addr) (netip.Addr, error) {
	prefix, err := netip.ParsePrefix(subnet)
	var addr netip.Addr
	k.sandboxIPs.do(func(ips map[types.UID]netip.Addr) {
		if a, ok := ips[uid]; ok {
			addr, err = a, nil
			return
		}
		if err != nil {
			err = fmt.Errorf("pod subnet %q: %w", subnet, err)
			return
		}
		used := sets.New(taken...)
		for _, a := range ips {
			used.Insert(a)
		}
		prefix = prefix.Masked()
		for a := prefix.Addr().Next().Next(); prefix.Contains(a) && prefix.Contains(a.Next()); a = a.Next() {
			if !used.Has(a) {
				ips[uid], addr = a, a
				return
			}
		}
		err = fmt.Errorf("no free address in %s", prefix)
	})
	return addr, err
}
