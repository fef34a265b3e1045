"""The commands an operator types on Linux hosts, routers and FRR routers, run in the node shells.

Each gets what a small real network gives: the exit status a real box returns and output
shaped like a real box's (or the real error). Where a node cannot behave as a real box, the
command is an explicit ``Exception`` with its reason, pinned to what it does here and listed
in docs/route.md ("What the shells show"), never dropped. Every harmless command passes the
agent's guard (``check_command``), and a sample sent as agent steps is valid and safe: no
harmless command is refused or judged unsafe. One static and one OSPF episode, opened once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from netarena.route import RouteApp
from netarena.route.sandbox.actions import check_command
from netarena.route.sandbox.capped import UNKNOWN_QDISC_NOTE
from netarena.route.static.episode import RouteEpisode

from .conftest import LIVE_FRR, NEEDS_ROOT, reply, small_frr_app

pytestmark = [pytest.mark.root, NEEDS_ROOT]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "route.md"
ANY = None
"""Any exit status (a tool whose status depends on timing, e.g. cut by ``head``)."""


@dataclass(frozen=True)
class Case:
    """A command on a node (``{near}``-style fields filled from the episode), the exit
    status a real box gives and a pattern (regex, searched) its output holds."""

    node: str
    command: str
    exit: int | None
    pattern: str
    reason: str = ""
    """Why it cannot behave as on a real box (an exception); empty when it does."""


def _c(node: str, command: str, exit: int | None, pattern: str) -> Case:
    return Case(node, command, exit, pattern)


STATIC = [
    # addresses, links, routes, rules, neighbours (iproute2)
    _c("h1", "ip addr", 0, r"inet 127\.0\.0\.1/8 scope host lo"),
    _c("h1", "ip -4 addr show dev h1-eth0", 0, r"inet {h1}/\d+ brd [\d.]+ scope global h1-eth0"),
    _c("h1", "ip -br addr", 0, r"h1-eth0@if\d+\s+UP\s+{h1}/"),
    _c("h1", "ip -br link", 0, r"h1-eth0@if\d+\s+UP\s+00:00:00:00:00:01"),
    _c("h1", "ip link show", 0, r"mtu 1500 qdisc noqueue state UP mode DEFAULT"),
    _c("h1", "ip -s link show h1-eth0", 0, r"RX:\s+bytes\s+packets"),
    _c("h1", "ip -d link show h1-eth0", 0, r"link-netnsid 0 promiscuity 0"),
    _c("h1", "ip route", 0, r"default via {gw} dev h1-eth0"),
    _c("h1", "ip route show table all", 0, r"local 127\.0\.0\.1 dev lo table local"),
    _c("h1", "ip route get {far}", 0, r"{far} via {gw} dev h1-eth0 src {h1}"),
    _c("h1", "ip rule", 0, r"32766:\s+from all lookup main"),
    _c("h1", "ip rule list", 0, r"0:\s+from all lookup local"),
    _c("h1", "ip neigh", 0, r""),
    _c("h1", "ip -s neigh", 0, r""),
    _c("h1", "ip -6 addr", 0, r"inet6 fe80::[0-9a-f:]+/64 scope link"),
    _c("h1", "ip -6 route", 0, r"fe80::/64 dev h1-eth0 proto kernel"),
    _c("h1", "ip netns list", 0, r"^\s*$"),
    _c("h1", "ip maddr", 0, r"inet\s+224\.0\.0\.1"),
    _c("h1", "ip link show nosuchdev", 1, r'Device "nosuchdev" does not exist\.'),
    _c("h1", "ip route get 300.1.1.1", 1, r'Error: any valid prefix is expected rather than'),
    _c("h1", "ip link set h1-eth0 mtu 1500", 0, r"^\s*$"),
    _c("r0", "ip addr", 0, r"inet {gw}/\d+ brd"),
    _c("r0", "ip -br addr", 0, r"r0-eth1@if\d+\s+UP"),
    _c("r0", "ip route", 0, r"dev r0-eth\d"),
    _c("r0", "ip route show table main", 0, r"proto kernel scope link src"),
    _c("r0", "ip route show table local", 0, r"local {gw} dev r0-eth1 proto kernel scope host"),
    _c("r0", "ip rule show", 0, r"32767:\s+from all lookup default"),
    _c("r0", "ip neigh show", 0, r"dev r0-eth|^\s*$"),  # idle: the judge's probes leave none
    _c("r0", "ip -s -s link", 0, r"RX errors:"),
    _c("r0", "ip -s route", 0, r"dev r0-eth"),
    _c("r0", "ip -j route", 0, r'^\[\{"dst":'),
    _c("r0", "ip xfrm state", 0, r"^\s*$"),
    _c("r0", "ip xfrm policy", 0, r"^\s*$"),
    _c("r0", "ip tunnel show", 0, r"^\s*$"),
    _c("r0", "ip route add 192.0.2.0/24 via 300.0.0.1", 1,
       r'Error: inet address is expected rather than "300\.0\.0\.1"\.'),
    _c("r0", "ip -s neigh flush all", 0,
       r"\*\*\* Flush is complete after 1 round \*\*\*|^\s*$|Nothing to flush\."),
    _c("r0", "bridge link", 0, r"^\s*$"),
    _c("r0", "bridge fdb show", 0, r"01:00:5e:00:00:01 dev r0-eth1 self permanent"),
    # sockets and the legacy net-tools
    _c("h1", "ss -tan", 0, r"LISTEN\s+0\s+\d+\s+0\.0\.0\.0:{port}"),
    _c("h1", "ss -lunp", 0, r"UNCONN\s+0\s+0\s+0\.0\.0\.0:{uport}"),
    _c("h1", "ss -s", 0, r"Transport Total\s+IP\s+IPv6"),
    _c("h1", "ss -Hltn", 0, r"LISTEN 0\s+\d+\s+0\.0\.0\.0:{port}"),
    _c("h1", "ss -t state established", 0, r"Recv-Q Send-Q Local Address:Port"),
    _c("h1", "ss -tan -o", 0, r"State\s+Recv-Q"),
    # without -t/-u, ss 6.1 also asks for DCCP, which Linux 6.16+ no longer has: a real box
    # with this kernel prints the same complaint before its table
    _c("h1", "ss -o state established", 0, r"RTNETLINK answers: Invalid argument\nNetid"),
    _c("h1", "netstat -rn", 0, r"0\.0\.0\.0\s+{gw}\s+0\.0\.0\.0\s+UG"),
    _c("h1", "netstat -i", 0, r"h1-eth0\s+1500"),
    _c("r0", "netstat -s | head -3", 0, r"Forwarding: 1|Ip:"),
    _c("h1", "route -n", 0, r"Kernel IP routing table"),
    _c("h1", "arp -n", 0, r"Address\s+HWtype\s+HWaddress|^\s*$"),  # empty table: nothing
    _c("h1", "arp -an", 0, r"^(\? \(.*|\s*)$"),
    _c("h1", "ifconfig", 0, r"inet {h1}\s+netmask 255\.255\.255\.\d+\s+broadcast"),
    _c("h1", "ifconfig -a", 0, r"ether 00:00:00:00:00:01\s+txqueuelen 1000"),
    # packet filters
    _c("r0", "iptables -L -n -v", 0, r"Chain FORWARD \(policy \w+ \d+ packets, \d+ bytes\)"),
    _c("r0", "iptables -S", 0, r"-P INPUT (ACCEPT|DROP)"),
    _c("r0", "iptables -t nat -L -n -v", 0, r"Chain PREROUTING \(policy ACCEPT"),
    _c("r0", "iptables -t nat -S", 0, r"-P POSTROUTING ACCEPT"),
    _c("r0", "iptables -t mangle -S", 0, r"-P PREROUTING ACCEPT"),
    _c("r0", "iptables -L FORWARD -n --line-numbers", 0, r"num\s+target\s+prot opt"),
    _c("r0", "iptables-save", 0, r"# Generated by iptables-save v1\.8\.\d+ \(nf_tables\)"),
    # iptables-nft 1.8.9 says this for a chain that does not exist (its own bug, not ours)
    _c("r0", "iptables -L NOSUCHCHAIN", 1, r"chain `NOSUCHCHAIN' in table `filter' is incompat"),
    _c("r0", "ip6tables -S", 0, r"-P FORWARD ACCEPT"),
    _c("r0", "nft list ruleset", 0, r"table ip nat \{"),
    _c("r0", "nft list tables", 0, r"table ip nat"),
    _c("r0", "nft list table ip nosuch", 1, r"Error: No such file or directory"),
    _c("r0", "ipset list", 0, r"^\s*$"),
    _c("r0", "ebtables -L", 0, r"Bridge chain: FORWARD, entries: 0, policy: ACCEPT"),
    # traffic control
    _c("r0", "tc qdisc show", 0, r"qdisc noqueue 0: dev r0-eth1 root refcnt 2"),
    _c("r0", "tc -s qdisc show", 0, r"Sent \d+ bytes \d+ pkt \(dropped 0, overlimits 0"),
    _c("r0", "tc class show dev r0-eth1", 0, r"^\s*$"),
    _c("r0", "tc filter show dev r0-eth1", 0, r"^\s*$"),
    _c("r0", "tc -s class show dev r0-eth1", 0, r"^\s*$"),
    _c("h1", "tc qdisc show dev h1-eth0", 0, r"qdisc noqueue 0: root refcnt 2"),
    _c("r0", "tc qdisc add dev r0-eth1 root tbf rate 1mbit burst 32kbit latency 400ms && "
       "tc -s qdisc show dev r0-eth1 && tc qdisc del dev r0-eth1 root", 0,
       r"qdisc tbf \w+: root refcnt \d+ rate 1Mbit burst 4Kb lat 400ms"),
    _c("r0", "tc qdisc add dev r0-eth1 root htb default 10 && tc qdisc del dev r0-eth1 root",
       0, r"^\s*$"),
    # sysctls and /proc
    _c("r0", "sysctl net.ipv4.ip_forward", 0, r"net\.ipv4\.ip_forward = 1"),
    _c("r0", "sysctl -a 2>/dev/null | grep -c net.ipv4", 0, r"^\d{3}$"),
    _c("r0", "sysctl net.ipv4.conf.all.rp_filter", 0, r"net\.ipv4\.conf\.all\.rp_filter = \d"),
    _c("r0", "sysctl net.ipv4.conf.r0-eth1.rp_filter", 0, r"conf\.r0-eth1\.rp_filter = \d"),
    _c("r0", "sysctl net.ipv4.icmp_ratelimit", 0, r"net\.ipv4\.icmp_ratelimit = 1000"),
    _c("r0", "sysctl net.nosuch.key", 1, r"sysctl: cannot stat /proc/sys/net/nosuch/key: No such"),
    _c("r0", "cat /proc/sys/net/ipv4/ip_forward", 0, r"^1$"),
    _c("r0", "cat /proc/net/route", 0, r"Iface\tDestination\tGateway"),
    _c("r0", "cat /proc/net/arp", 0, r"IP address\s+HW type\s+Flags"),
    _c("r0", "cat /proc/net/dev", 0, r"r0-eth1:\s+\d+"),
    _c("r0", "cat /proc/net/snmp", 0, r"Ip: Forwarding DefaultTTL"),
    _c("r0", "cat /proc/net/netstat | head -2", 0, r"TcpExt:"),
    _c("r0", "cat /proc/net/tcp | head -3", 0, r"sl\s+local_address rem_address"),
    _c("r0", "cat /proc/net/fib_trie | head -20", 0, r"Main:"),
    _c("h1", "ls /proc/sys/net/ipv4/conf", 0, r"^all\ndefault\nh1-eth0\nlo$"),
    _c("h1", "nstat -az | head -5", 0, r"#kernel\nIpInReceives"),
    # NICs and connection tracking
    _c("h1", "ethtool h1-eth0", 0, r"Settings for h1-eth0:"),
    _c("h1", "ethtool -i h1-eth0", 0, r"driver: veth"),
    _c("h1", "ethtool -S h1-eth0", 0, r"NIC statistics:\s+peer_ifindex: \d+"),
    _c("h1", "ethtool -k h1-eth0", 0, r"Features for h1-eth0:"),
    _c("r0", "conntrack -L -p icmp", 0, r"flow entries have been shown\."),
    _c("r0", "conntrack -L", 0, r"^(icmp|udp|tcp)\s+\d+ \d+ |0 flow entries have been shown\."),
    _c("r0", "conntrack -S", 0, r"cpu=0\s+found=\d+"),
    _c("r0", "conntrack -C", 0, r"^\d+$"),
    # reachability: ping, traceroute, tracepath, mtr, arping
    _c("h1", "ping -c 2 -i 0.2 -W 1 {near}", 0,
       r"2 packets transmitted, 2 received, 0% packet loss"),
    _c("h1", "ping -c 2 -i 0.2 -W 1 -n {near}", 0, r"64 bytes from {near}: icmp_seq=2 ttl=64"),
    _c("h1", "ping -c 1 -W 1 -I h1-eth0 {near}", 0, r"PING {near} \({near}\) from {h1} h1-eth0"),
    _c("h1", "ping -c 1 -W 1 -s 1472 -M do {near}", 0, r"1480 bytes from {near}"),
    _c("h1", "ping -c 1 -W 1 -s 1473 -M do {near}", 1,
       r"ping: local error: message too long, mtu=1500"),
    _c("h1", "ping -c 1 -W 1 -n {far}", 1, r"1 packets transmitted, 0 received"),
    _c("h1", "ping -q -c 3 -i 0.2 -W 1 {near}", 0, r"3 packets transmitted, 3 received"),
    _c("h1", "ping -c 1 -w 2 {near}", 0, r"1 received, 0% packet loss"),
    _c("h1", "ping -c 1 -W 1 10.255.255.254", 1, r"100% packet loss"),
    _c("h1", "ping -c 1 -W 1 nosuch.host", 2,
       r"ping: nosuch\.host: Temporary failure in name resolution"),
    _c("h1", "ping -6 -c 1 -W 1 ::1", 0, r"64 bytes from ::1: icmp_seq=1"),
    _c("h1", "ping -c 1 127.0.0.1", 0, r"64 bytes from 127\.0\.0\.1"),
    _c("h1", "ping -c 1 -W 1 h2", 0, r"PING h2 \({near}\)"),
    _c("r0", "ping -c 1 -W 1 {far}", 0, r"64 bytes from {far}"),
    _c("{farname}", "ping -c 1 -W 1 {fargw}", 0, r"64 bytes from {fargw}"),
    _c("h1", "ping -f -c 100 {near}", 0, r"100 packets transmitted, 100 received, 0% packet loss"),
    _c("h1", "ping -q -f -c 200 {near}", 0, r"200 packets transmitted, 200 received"),
    _c("h1", "traceroute -n -w 1 -q 1 {near}", 0, r" 1  {near}  [\d.]+ ms"),
    _c("h1", "traceroute -n -w 1 -q 1 -m 3 {far}", 0, r"3 hops max, 60 byte packets"),
    _c("h1", "traceroute -I -n -w 1 -q 1 {near}", 0, r" 1  {near}"),
    _c("h1", "traceroute -T -n -w 1 -q 1 -p 22 {near}", 0, r" 1  {near}"),
    _c("h1", "traceroute -U -n -w 1 -q 1 {near}", 0, r" 1  {near}"),
    _c("{farname}", "traceroute -n -w 1 -q 1 {farnear}", 0, r" 1  {farnear}"),
    _c("h1", "tracepath -n -m 3 {near}", 0, r"1:  {near}\s+[\d.]+ms reached"),
    _c("h1", "mtr --report -n -c 1 --gracetime 1 {near}", 0, r"HOST: h1\s+Loss%"),
    _c("h1", "mtr -r -n -c 1 --gracetime 1 {near}", 0, r"1\.\|-- {near}\s+0\.0%"),
    _c("h1", "arping -c 1 -w 2 {near}", 0, r"42 bytes from 00:00:00:00:00:02 \({near}\)"),
    _c("h1", "arping -c 1 -w 2 -I h1-eth0 {near}", 0, r"1 packets received"),
    # capture
    _c("h1", "(sleep 0.5; ping -c 3 -i 0.2 {near} > /dev/null) & "
       "tcpdump -n -c 2 -i h1-eth0 icmp", 0,
       r"IP {h1} > {near}: ICMP echo request[\s\S]*2 packets captured"),
    _c("h1", "(sleep 0.5; ping -c 2 -i 0.2 {near} > /dev/null) & "
       "tcpdump -nn -e -c 1 -i any icmp", 0, r"listening on any, link-type LINUX_SLL2"),
    _c("h1", "timeout 1 tcpdump -n -i h1-eth0 -c 1 port 1", 124, r"0 packets captured"),
    _c("h1", "tcpdump -D", 0, r"1\.h1-eth0 \[Up, Running, Connected\]"),
    # services, names
    _c("h1", "nc -zv -w 1 {near} {nport}", 0,
       r"Connection to {near} {nport} port \[tcp/\*\] succeeded!"),
    _c("h1", "nc -zvu -w 1 {near} {nuport}", 0, r"port \[udp/\*\] succeeded!"),
    _c("h1", "nc -zv -w 1 {near} 22", 1, r"port 22 \(tcp\) failed: Connection refused"),
    _c("h1", "curl -sS -m 2 http://{near}/", 7,
       r"curl: \(7\) Failed to connect to {near} port 80 after \d+ ms"),
    # the service waits for its probe's token: curl, like on any non-HTTP port, times out
    _c("h1", "curl -sS -m 1 http://{near}:{nport}/", 28, r"curl: \(28\) Operation timed out"),
    _c("h1", "iperf -c {near} -t 1", ANY, r"tcp connect failed: Connection refused"),
    _c("h1", "iperf3 -c {near} -t 1", 1, r"unable to connect to server: Connection refused"),
    _c("h1", "dig +time=1 +tries=1 @{gw} h2", 9, r";; no servers could be reached"),
    _c("h1", "host -W 1 -t A h2 {gw}", 1, r";; no servers could be reached"),
    _c("h1", "nslookup -timeout=1 -retry=0 h2 {gw}", 1, r"communications error to {gw}#53"),
    _c("h1", "getent hosts h2", 0, r"^{near}\s+h2$"),
    _c("h1", "cat /etc/hosts", 0, r"{near}\th2"),
    # the box itself
    _c("h1", "hostname", 0, r"^h1$"),
    _c("h1", "hostname -I", 0, r"^{h1} ?$"),
    _c("h1", "uname -a", 0, r"^Linux h1 \S+ .* GNU/Linux$"),
    _c("h1", "whoami", 0, r"^root$"),
    _c("h1", "id", 0, r"uid=0\(root\) gid=0\(root\)"),
    _c("h1", "uptime", 0, r"load average:"),
    _c("h1", "free -m", 0, r"Mem:\s+\d+"),
    _c("h1", "cat /proc/cpuinfo | head -2", 0, r"processor\s+: 0"),
    _c("h1", "ip monitor & sleep 1; kill %1", 0, r""),
]

STATIC_EXCEPTIONS = [
    Case("h1", "ss -ltnp", 0, r"LISTEN .*0\.0\.0\.0:{port}\s+0\.0\.0\.0:\*\s*$",
         "the listeners are the judge's own sockets (services.py), owned outside the node's "
         "user namespace, so ss shows no users:((...)) process column"),
    Case("h1", "netstat -tlnp", 0, r"^tcp .*LISTEN\s+-\s*$",
         "the same listeners: no process of the node holds them, so netstat names none"),
    Case("h1", "lsof -i -n", 1, r"^\s*$",
         "the same listeners: no process of the node holds them, so lsof lists nothing"),
    Case("h1", "ps aux", 0, r"^root +1 .* timeout -s INT -k 1 \S+ bash -c ps aux$",
         "PID 1 of the node's PID namespace is the command's time limit (timeout), not init"),
    Case("h1", "dmesg | tail -3", 0, r"dmesg: read kernel buffer failed: Operation not "
         r"permitted",
         "the kernel log is the host's, shared by every episode: the node's root may not read it"),
    Case("r0", "cat /proc/net/nf_conntrack | head -3", 0, r"Permission denied",
         "the legacy conntrack file needs privileges of the host's user namespace; "
         "`conntrack -L` lists the same entries"),
    Case("h1", "lsmod", ANY, r"could not open /proc/modules|lsmod: command not found",
         "kernel modules are the host's: a node's /proc has no modules file (and nothing "
         "can load one from a node)"),
]

FRR = [
    _c("{a}", "vtysh -c 'show running-config'", 0, r"frr version 8\.4\.\d+\nfrr defaults "
       r"traditional\nhostname {a}"),
    _c("{a}", "vtysh -c 'write terminal'", 0, r"Current configuration:"),
    _c("{a}", "vtysh -c 'show running-config ospfd'", 0, r"router ospf"),
    _c("{a}", "vtysh -c 'show ip route'", 0, r"Codes: K - kernel route, C - connected"),
    _c("{a}", "vtysh -c 'show ip route ospf'", 0, r"O>\* [\d./]+ \[110/\d+\] via"),
    _c("{a}", "vtysh -c 'show ip route connected'", 0, r"C>\* [\d./]+ is directly connected"),
    _c("{a}", "vtysh -c 'show ip route summary'", 0, r"Route Source\s+Routes\s+FIB"),
    _c("{a}", "vtysh -c 'show ip route {bip}'", 0, r"Routing entry for [\d./]+"),
    _c("{a}", "vtysh -c 'show ip fib'", 0, r"Codes: K - kernel route"),
    _c("{a}", "vtysh -c 'show ip ospf'", 0, r"OSPF Routing Process, Router ID: [\d.]+"),
    _c("{a}", "vtysh -c 'show ip ospf neighbor'", 0, r"Neighbor ID\s+Pri State"),
    _c("{a}", "vtysh -c 'show ip ospf neighbor detail'", 0, r"Neighbor [\d.]+, interface "
       r"address"),
    _c("{a}", "vtysh -c 'show ip ospf neighbor json'", 0, r'"neighbors":\{'),
    _c("{a}", "vtysh -c 'show ip ospf interface'", 0, r"MTU mismatch detection: enabled"),
    _c("{a}", "vtysh -c 'show ip ospf interface json'", 0, r'"interfaces":\{'),
    _c("{a}", "vtysh -c 'show ip ospf database'", 0, r"Router Link States \(Area 0\.0\.0\.\d+\)"),
    _c("{a}", "vtysh -c 'show ip ospf database router'", 0, r"LS Type: router-LSA"),
    _c("{a}", "vtysh -c 'show ip ospf route'", 0, r"OSPF network routing table"),
    _c("{a}", "vtysh -c 'show ip ospf border-routers'", 0, r"OSPF router routing table"),
    _c("{a}", "vtysh -c 'show interface brief'", 0, r"Interface\s+Status\s+VRF\s+Addresses"),
    _c("{a}", "vtysh -c 'show interface'", 0, r"Interface lo is up, line protocol is up"),
    _c("{a}", "vtysh -c 'show interface lo'", 0, r"flags: <UP,LOOPBACK,RUNNING>"),
    _c("{a}", "vtysh -c 'show version'", 0, r"FRRouting 8\.4\.\d+ \({a}\) on Linux"),
    _c("{a}", "vtysh -c 'show ip protocol'", 0, r"Protocol\s+: route-map"),
    _c("{a}", "vtysh -c 'show ip nht'", 0, r""),
    _c("{a}", "vtysh -c 'show zebra'", 0, r"v4 Forwarding\s+On"),
    _c("{a}", "vtysh -c 'show zebra client summary'", 0, r"Name\s+Connect Time"),
    _c("{a}", "vtysh -c 'show ip forward'", 0, r"IP forwarding is on"),
    _c("{a}", "vtysh -c 'show logging'", 0, r"Logging configuration for zebra:"),
    _c("{a}", "vtysh -c 'show debugging'", 0, r"OSPF debugging status:"),
    _c("{a}", "vtysh -c 'show daemons'", 0, r"zebra ospfd staticd"),
    _c("{a}", "vtysh -c 'show memory' | head -3", 0, r"Memory statistics for zebra:"),
    _c("{a}", "vtysh -c 'show route-map'", 0, r"ZEBRA:"),
    _c("{a}", "vtysh -c 'show ip prefix-list'", 0, r"\A(?:ZEBRA:|\Z)"),  # none: nothing
    _c("{a}", "vtysh -c 'show ip access-list'", 0, r"OSPF:"),
    _c("{a}", "vtysh -c 'show bgp summary'", 1, r"bgpd is not running"),
    _c("{a}", "vtysh -c 'show ip bgp'", 1, r"bgpd is not running"),
    # FRR's show_startup_config (lib/command.c) returns at once when host.config is unset,
    # and vtysh's own process never sets it: a real box prints nothing either
    _c("{a}", "vtysh -c 'show startup-config'", 0, r"^\s*$"),
    _c("{a}", "vtysh -c 'show nosuch'", 1, r"% Unknown command: show nosuch"),
    _c("{a}", "vtysh -c 'show ip ospf neighbor' -c 'show ip route'", 0,
       r"Neighbor ID[\s\S]*Codes: K - kernel route"),
    _c("{a}", "ip route", 0, r"proto ospf metric 20"),
    _c("{a}", "ip route show proto ospf", 0, r"via [\d.]+ dev {a}-eth\d+ metric 20"),
    _c("{a}", "ip -br addr", 0, r"{a}-eth1@if\d+\s+UP\s+{aip}/30"),
    _c("{a}", "ping -c 1 -W 1 {bip}", 0, r"64 bytes from {bip}: icmp_seq=1 ttl=64"),
    _c("{a}", "traceroute -n -w 1 -q 1 {bip}", 0, r" 1  {bip}"),
    _c("{a}", "mtr --report -n -c 1 --gracetime 1 {bip}", 0, r"1\.\|-- {bip}"),
    _c("{a}", "ss -ltnp", 0, r'users:\(\("\w+d",pid=\d+'),
    _c("{a}", "ps aux | grep -c frr", 0, r"^\d+$"),
    _c("{a}", "ls /etc/frr", 0, r"frr\.conf\nvtysh\.conf"),
    _c("{a}", "(sleep 0.5; ping -c 2 -i 0.2 {bip} > /dev/null) & "
       "tcpdump -n -c 1 -i any icmp", 0, r"ICMP echo request"),
    _c("{a}", "timeout 4 tcpdump -n -c 1 -i any proto ospf", 0, r"OSPFv2, Hello"),
    _c("{a}", "iptables -S", 0, r"-P FORWARD ACCEPT"),
    _c("{a}", "nft list ruleset", 0, r""),
    _c("{a}", "sysctl net.ipv4.ip_forward", 0, r"net\.ipv4\.ip_forward = 1"),
    _c("{a}", "tc qdisc add dev {a}-eth1 root netem delay 10ms", 2,
       r"^Error: Specified qdisc kind is unknown\.\n" + re.escape(UNKNOWN_QDISC_NOTE)),
]

FRR_EXCEPTIONS = [
    Case("{a}", "cat /etc/frr/daemons", 1, r"No such file or directory",
         "a router's /etc/frr holds only frr.conf and vtysh.conf: its daemons are started by "
         "the network (frr/), not by Debian's frrinit.sh reading /etc/frr/daemons"),
    Case("{a}", "vtysh -c 'write memory'", 0, r"without watchfrr[\s\S]*could not look up user "
         r"\"frr\"[\s\S]*Integrated configuration saved to /etc/frr/frr\.conf",
         "the file is saved, but the router's box has no watchfrr and no frr user: vtysh writes "
         "it itself and warns about both, where a real box prints only `[OK]`"),
]

STEPPED_STATIC = [
    ("h1", "ip route"), ("h1", "ip neigh"), ("r0", "iptables -L -n -v"),
    ("r0", "nft list ruleset"), ("r0", "tc -s qdisc show"), ("r0", "ip rule"),
    ("r0", "sysctl net.ipv4.ip_forward"), ("h1", "traceroute -n -w 1 -q 1 -m 2 {far}"),
    ("h1", "ping -f -c 100 {near}"), ("r0", "conntrack -L -p icmp"),
]
STEPPED_FRR = [
    ("{a}", "vtysh -c 'show running-config'"), ("{a}", "vtysh -c 'show ip ospf neighbor'"),
    ("{a}", "vtysh -c 'show ip route'"), ("{a}", "vtysh -c 'show ip ospf interface'"),
    ("{a}", "ping -c 2 -W 1 {bip}"), ("{a}", "ip route"), ("{a}", "vtysh -c 'write memory'"),
]


def _static_fields(episode: RouteEpisode) -> dict[str, str]:
    h1, *others = episode.plan.hosts
    near = next(h for h in others if h.subnet == h1.subnet)
    far = [h for h in others if h.subnet != h1.subnet]
    tcp, udp, ntcp, nudp = (
        re.findall(r"0\.0\.0\.0:(\d+)", episode.net.shell(node, f"ss -Hl{kind}n").output)[0]
        for node in ("h1", near.name) for kind in "tu")
    return {"h1": h1.ip, "near": near.ip, "far": far[0].ip, "farnear": far[1].ip,
            "farname": far[0].name,
            "gw": episode.plan.subnet(h1.subnet).gateway,
            "fargw": episode.plan.subnet(far[0].subnet).gateway, "port": tcp, "uport": udp,
            "nport": ntcp, "nuport": nudp}


def _fill(text: str, fields: dict[str, str], escape: bool = False) -> str:
    """``text`` with each ``{name}`` of ``fields`` replaced (regex-escaped if ``escape``)."""
    return re.sub(r"\{(\w+)\}", lambda m: (re.escape if escape else str)(
        fields[m[1]]) if m[1] in fields else m[0], text)


def _mismatches(episode: Any, cases: list[Case], fields: dict[str, str]) -> list[str]:
    """Every case whose exit status or output is not the expected one, described."""
    wrong = []
    for case in cases:
        node, command = _fill(case.node, fields), _fill(case.command, fields)
        pattern = _fill(case.pattern, fields, escape=True)
        result = episode.net.shell(node, command)
        status_ok = case.exit is None or result.returncode == case.exit
        if not status_ok or not re.search(pattern, result.output.strip(), re.M):
            wrong.append(f"[{node}] {command}: exit {result.returncode}\n{result.output[:600]}")
    return wrong


def _assert_steps_are_safe(episode: Any, steps: list[tuple[str, str]],
                           fields: dict[str, str]) -> None:
    """Sent as agent steps, harmless commands are valid, rewarded and change nothing."""
    for node, command in steps:
        result = episode.step(reply(_fill(node, fields), _fill(command, fields)))
        assert result.valid and result.reward >= 0 and result.info["problems"] == 0, (
            command, result.observation[:400])


def _report(name: str, cases: list[Case], exceptions: list[Case], wrong: list[str]) -> None:
    passed = len(cases) - len(wrong)
    print(f"{name} corpus: {passed}/{len(cases) + len(exceptions)} behave as on a real box, "
          f"{len(exceptions)} listed exceptions")


def test_every_harmless_command_passes_the_agents_guard() -> None:
    for case in STATIC + STATIC_EXCEPTIONS + FRR + FRR_EXCEPTIONS:
        check_command(case.command)  # raises ForbiddenCommand / InvalidAction


def test_the_corpus_is_large_and_its_exceptions_are_few_and_documented() -> None:
    cases = STATIC + FRR
    exceptions = STATIC_EXCEPTIONS + FRR_EXCEPTIONS
    assert len(cases) + len(exceptions) >= 150
    assert len(exceptions) <= 0.05 * (len(cases) + len(exceptions))
    assert all(case.reason for case in exceptions) and not any(case.reason for case in cases)
    docs = DOCS.read_text()
    for case in exceptions:
        assert f"`{case.command.replace('{a}', 'r1')}`" in docs, case.command


@pytest.mark.slow
def test_static_hosts_and_router_behave_as_real_boxes() -> None:
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
    with app.open(app.generate(61, 1, "WR")) as episode:
        fields = _static_fields(episode)
        wrong = _mismatches(episode, STATIC, fields)
        odd = _mismatches(episode, STATIC_EXCEPTIONS, fields)
        _report("static", STATIC, STATIC_EXCEPTIONS, wrong)
        assert not wrong, "\n\n".join(wrong)
        assert not odd, "an exception changed (fixed? update the list):\n" + "\n\n".join(odd)
        _assert_steps_are_safe(episode, STEPPED_STATIC, fields)
        score = episode.score()
        assert score.safe and not score.collateral, score


@pytest.mark.slow
@LIVE_FRR[-1]  # needs FRR
def test_frr_routers_behave_as_real_frr() -> None:
    app = small_frr_app()
    with app.open(app.generate(31, 1, "ospf-cost")) as episode:
        link = episode.plan.links[0]
        fields = {"a": link.a, "b": link.b, "aip": link.a_ip, "bip": link.b_ip}
        wrong = _mismatches(episode, FRR, fields)
        odd = _mismatches(episode, FRR_EXCEPTIONS, fields)
        _report("FRR", FRR, FRR_EXCEPTIONS, wrong)
        assert not wrong, "\n\n".join(wrong)
        assert not odd, "an exception changed (fixed? update the list):\n" + "\n\n".join(odd)
        _assert_steps_are_safe(episode, STEPPED_FRR, fields)
        score = episode.score()
        assert score.safe and not score.collateral, score
