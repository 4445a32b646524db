#!/bin/bash
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
#
# An all-in-one devstack with the nova-accel plugin, for real, on one
# Debian 12 host without internet access: devstack's own stack.sh, from
# local git mirrors, with devstack/local.conf.aio.sample as local.conf;
# then a server booted with an accelerator flavor, the plugin's tempest
# tests, unstack.sh, and a teardown that stops every daemon the run
# started so that its ports are free again.
#
# Usage (as root): tools/devstack/stack-aio.sh [PHASE...]
#   PHASE: prepare stack check tempest unstack teardown; none: all of
#   them in that order, and teardown runs even when one fails.
#
# Variables:
#   NOVA_ACCEL_GIT_MIRRORS  directory of the git mirrors (prepare), laid
#       out as <owner>/<name>.git (devstack's GIT_BASE) or as
#       <owner>+<name>/repo (bare repositories), copied into
#       GIT_BASE_DIR (/opt/stack-git-mirrors); it must hold devstack,
#       requirements, keystone, placement, glance, nova, tempest and
#       os-test-images of openstack.
#   DEVSTACK_BRANCH  branch of devstack and of every project (master).
#   NOVA_ACCEL_REF   commit of nova-accel to run: this checkout's HEAD.
#   STACK_DEST       devstack's DEST (/opt/stack).
# Reports: $STACK_DEST/logs (stack.sh.log, phases.log, check.log,
# tempest.log).
#
# Deviations from a stock devstack run, and why (doc/source/contributor,
# "devstack, for real"):
# - GIT_BASE is a directory of copies of the local mirrors (no git
#   host is reachable); nova-accel is a bare clone of this checkout
#   pinned at NOVA_ACCEL_REF.
# - Where PID 1 is not systemd, systemd's systemctl is diverted and
#   replaced by docker-systemctl-replacement's systemctl3 (PyPI), which
#   runs the unit files devstack writes; teardown restores it. There
#   iscsid, which lib/nova restarts for n-cpu, is a no-op (drop-in):
#   it cannot run in a container, and nothing here uses iSCSI.
# - VIRT_DRIVER=fake with NOVA_ACCEL_COMPUTE_DRIVER=accel.FakeDriver: no
#   KVM here.
# - IMAGE_URLS is a local qcow2 made with qemu-img, and
#   DOWNLOAD_DEFAULT_IMAGES=False (no cirros download from GitHub).
# - TEMPEST_VENV_UPPER_CONSTRAINTS is requirements' file on disk: the
#   default (master) makes tox fetch releases.openstack.org.
# - Only the services the plugin needs run (no neutron, cinder, swift,
#   horizon, etcd3, dstat, n-novnc): servers boot with --nic none.
# - Nova lists a server's ports in Neutron even then (server show,
#   delete): network_stub.py, in the catalog as the network service,
#   answers as a Neutron without ports.

set -o errexit -o nounset -o pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEVSTACK_BRANCH=${DEVSTACK_BRANCH:-master}
NOVA_ACCEL_REF=${NOVA_ACCEL_REF:-$(git -C "$REPO" rev-parse HEAD)}
STACK_DEST=${STACK_DEST:-/opt/stack}
STACK_USER=stack
GIT_BASE_DIR=${GIT_BASE_DIR:-/opt/stack-git-mirrors}
LOG_DIR=$STACK_DEST/logs
IMAGE_DIR=/opt/stack-images
IMAGE_NAME=accel-test
STANDIN=/usr/local/lib/systemctl-standin/systemctl3.py
STANDIN_VERSION=1.7.1097
NETWORK_STUB_PORT=9696
ISCSID_DROPIN=/etc/systemd/system/iscsid.service.d/stack-aio.conf
PROJECTS="devstack requirements keystone placement glance nova tempest os-test-images"
# What an all-in-one devstack of these services listens on.
PORTS="80 443 3306 4369 5000 5432 5672 6666 8774 8775 8778 9292 9696 11211 25672"

function die { echo "stack-aio: $*" >&2; exit 1; }

function log_phase {
    mkdir -p "$LOG_DIR"
    echo "$(date -u +%FT%TZ) $*" | tee -a "$LOG_DIR/phases.log"
}

# Run a bash command line as the stack user, with a clean environment.
function as_stack {
    sudo -u "$STACK_USER" -H env -i HOME="$STACK_DEST" USER="$STACK_USER" \
        LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        bash -c "$1"
}

function mirror_of {
    local name=$1 dir=$NOVA_ACCEL_GIT_MIRRORS
    if [[ -d "$dir/openstack/$name.git" ]]; then
        echo "$dir/openstack/$name.git"
    elif [[ -d "$dir/openstack+$name/repo" ]]; then
        echo "$dir/openstack+$name/repo"
    else
        die "no mirror of openstack/$name in $dir"
    fi
}

function install_systemctl_standin {
    [[ "$(ps -o comm= -p 1)" != systemd ]] || return 0
    [[ -f "$STANDIN" ]] || {
        local tmp
        tmp=$(mktemp -d)
        python3 -m pip download -q --no-deps -d "$tmp" \
            "docker-systemctl-replacement==$STANDIN_VERSION"
        install -d "$(dirname "$STANDIN")"
        python3 -m zipfile -e "$tmp"/docker_systemctl_replacement-*.whl "$tmp/x"
        install -m 755 "$tmp/x/systemctl2/systemctl3.py" "$STANDIN"
        rm -rf "$tmp"
    }
    # Diverted, so that an upgrade of systemd (devstack's packages pull
    # one) installs its systemctl beside the stand-in.
    local path
    path=$(systemctl_path)
    if ! dpkg-divert --list "$path" | grep -q systemctl.distrib; then
        dpkg-divert --local --rename --divert "$path.distrib" --add "$path"
    fi
    ln -sf "$STANDIN" "$path"
    # lib/nova restarts iscsid for n-cpu; iscsid cannot run in a
    # container (no NETLINK_ISCSI socket), and nothing here uses iSCSI.
    install -d "$(dirname "$ISCSID_DROPIN")"
    cat > "$ISCSID_DROPIN" <<EOF
# stack-aio.sh: iscsid cannot run here; nothing uses iSCSI in this cloud.
[Service]
Type=oneshot
RemainAfterExit=yes
PIDFile=
ExecStartPre=
ExecStart=
ExecStart=/bin/true
EOF
}

# The path of systemctl in the systemd package: /bin/systemctl on
# Debian 12 (merged /usr, the package's path unmerged), /usr/bin later.
function systemctl_path {
    local path
    for path in /bin/systemctl /usr/bin/systemctl; do
        if dpkg-query -S "$path" 2>/dev/null | grep -q '^systemd:'; then
            echo "$path"
            return
        fi
    done
    echo /usr/bin/systemctl
}

function remove_systemctl_standin {
    local path
    path=$(systemctl_path)
    if dpkg-divert --list "$path" | grep -q systemctl.distrib; then
        rm -f "$path"
        dpkg-divert --local --rename --remove "$path"
    fi
    rm -f "$ISCSID_DROPIN"
    rmdir --ignore-fail-on-non-empty "$(dirname "$ISCSID_DROPIN")" 2>/dev/null || true
}

function phase_prepare {
    [[ -n "${NOVA_ACCEL_GIT_MIRRORS:-}" ]] || die "set NOVA_ACCEL_GIT_MIRRORS"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q sudo git qemu-utils
    install_systemctl_standin
    # As devstack's tools/create-stack-user.sh.
    getent group "$STACK_USER" >/dev/null || groupadd "$STACK_USER"
    id "$STACK_USER" >/dev/null 2>&1 ||
        useradd -g "$STACK_USER" -s /bin/bash -d "$STACK_DEST" -m "$STACK_USER"
    chown "$STACK_USER:" "$STACK_DEST" "$LOG_DIR"
    chmod 755 "$STACK_DEST"
    echo "$STACK_USER ALL=(root) NOPASSWD:ALL" > /etc/sudoers.d/50_stack_sh
    chmod 440 /etc/sudoers.d/50_stack_sh
    # GIT_BASE: <GIT_BASE>/openstack/<name>.git, and nova-accel pinned.
    # Copies, readable by the stack user (a mirror's files may be
    # root's alone), made without a transport: a mirror may lack an old
    # object, which a clone through upload-pack would refuse.
    local name
    install -d "$GIT_BASE_DIR/openstack" "$GIT_BASE_DIR/x"
    for name in $PROJECTS; do
        [[ -d "$GIT_BASE_DIR/openstack/$name.git" ]] ||
            git clone -q --bare --no-hardlinks "$(mirror_of "$name")" \
                "$GIT_BASE_DIR/openstack/$name.git"
    done
    rm -rf "$GIT_BASE_DIR/x/nova-accel.git"
    git clone -q --bare "$REPO" "$GIT_BASE_DIR/x/nova-accel.git"
    git -C "$GIT_BASE_DIR/x/nova-accel.git" branch -f devstack-aio "$NOVA_ACCEL_REF"
    chmod -R a+rX "$GIT_BASE_DIR"
    as_stack "git config --global --add safe.directory '*'"
    [[ -d "$STACK_DEST/devstack" ]] || as_stack "git clone -q -b $DEVSTACK_BRANCH \
        $GIT_BASE_DIR/openstack/devstack.git $STACK_DEST/devstack"
    install -d "$IMAGE_DIR"
    [[ -f "$IMAGE_DIR/$IMAGE_NAME.qcow2" ]] ||
        qemu-img create -q -f qcow2 "$IMAGE_DIR/$IMAGE_NAME.qcow2" 16M
    # devstack keeps an existing clone (RECLONE=False): the plugin's is
    # made again, at NOVA_ACCEL_REF.
    rm -rf "$STACK_DEST/nova-accel"
    write_local_conf > "$STACK_DEST/devstack/local.conf"
    chown "$STACK_USER:" "$STACK_DEST/devstack/local.conf"
    install -d -o "$STACK_USER" "$LOG_DIR"
}

function write_local_conf {
    sed -e "s|^enable_plugin nova-accel .*|enable_plugin nova-accel file://$GIT_BASE_DIR/x/nova-accel.git devstack-aio|" \
        "$REPO/devstack/local.conf.aio.sample"
    cat <<EOF

# stack-aio.sh: local mirrors, no internet, no KVM.
GIT_BASE=$GIT_BASE_DIR
TARGET_BRANCH=$DEVSTACK_BRANCH
DEST=$STACK_DEST
LOGFILE=$LOG_DIR/stack.sh.log
LOGDAYS=1
disable_all_services
enable_service key mysql rabbit placement-api placement-client g-api
enable_service n-api n-cond n-sch n-cpu tempest
VIRT_DRIVER=fake
NOVA_ACCEL_COMPUTE_DRIVER=accel.FakeDriver
DOWNLOAD_DEFAULT_IMAGES=False
IMAGE_URLS=file://$IMAGE_DIR/$IMAGE_NAME.qcow2
DEFAULT_IMAGE_NAME=$IMAGE_NAME
DEFAULT_IMAGE_FILE_NAME=$IMAGE_NAME.qcow2
TEMPEST_VENV_UPPER_CONSTRAINTS=$STACK_DEST/requirements/upper-constraints.txt
EOF
}

function phase_stack {
    as_stack "cd $STACK_DEST/devstack && ./stack.sh"
    start_network_stub
}

# Nova asks Neutron for a server's ports even with --nic none (server
# show, delete): network_stub.py answers as a Neutron without ports, in
# the catalog as the network service.
function start_network_stub {
    local host
    host=$(sed -n 's/^SERVICE_HOST=//p' "$STACK_DEST/devstack/.stackenv")
    stop_network_stub
    as_stack "setsid nohup python3 $REPO/tools/devstack/network_stub.py \
        $host $NETWORK_STUB_PORT >$LOG_DIR/network-stub.log 2>&1 &
        echo \$! > $LOG_DIR/network-stub.pid"
    as_stack "export OS_CLOUD=devstack-admin
        openstack service show network >/dev/null 2>&1 ||
            openstack service create --name network-stub network -f value -c id
        openstack endpoint list --service network -f value -c ID | grep -q . ||
            openstack endpoint create --region RegionOne network public \
                http://$host:$NETWORK_STUB_PORT -f value -c id"
}

function stop_network_stub {
    local pid
    pid=$(cat "$LOG_DIR/network-stub.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null || true
    rm -f "$LOG_DIR/network-stub.pid"
}

function phase_check {
    as_stack "set -o errexit -o pipefail; cd $STACK_DEST/devstack
        source openrc admin admin >/dev/null
        $(declare -f check_server)
        check_server" 2>&1 | tee "$LOG_DIR/check.log"
}

# As the stack user: a device profile of a fake FPGA (what the tempest
# scenarios ask for), a flavor asking for it, a server with --nic none,
# its ARQs through the accelerator API; everything deleted afterwards.
function check_server {
    local token ep group server arqs
    token=$(openstack token issue -f value -c id)
    ep=$(openstack endpoint list --service accelerator --interface public -f value -c URL)
    group='{"resources:FPGA": "1", "trait:CUSTOM_FAKE_DEVICE": "required"}'
    # What an interrupted run left.
    openstack server delete --wait aio-accel-server 2>/dev/null || true
    openstack flavor delete aio-accel 2>/dev/null || true
    curl -s -o /dev/null -X DELETE -H "X-Auth-Token: $token" "$ep/device_profiles/aio-fpga"
    curl -sSf -X POST -H "X-Auth-Token: $token" -H 'Content-Type: application/json' \
        -d "[{\"name\": \"aio-fpga\", \"groups\": [$group]}]" "$ep/device_profiles"
    echo
    openstack flavor create --ram 128 --disk 1 --vcpus 1 \
        --property accel:device_profile=aio-fpga aio-accel -f value -c id
    SECONDS=0
    openstack --os-compute-api-version 2.37 server create --flavor aio-accel \
        --image accel-test --nic none --wait aio-accel-server \
        -f value -c id -c status -c OS-EXT-SRV-ATTR:host
    echo "server create --wait: ${SECONDS}s"
    server=$(openstack server show aio-accel-server -f value -c id)
    openstack server show aio-accel-server -c status -c flavor -c OS-EXT-SRV-ATTR:hypervisor_hostname
    arqs=$(curl -sSf -H "X-Auth-Token: $token" "$ep/accelerator_requests?instance=$server")
    echo "$arqs" | python3 -m json.tool
    openstack server delete --wait aio-accel-server
    openstack flavor delete aio-accel
    curl -sSf -X DELETE -H "X-Auth-Token: $token" "$ep/device_profiles/aio-fpga"
    echo "$arqs" | python3 -c 'import json, sys
arqs = json.load(sys.stdin)["arqs"]
states = [a["state"] for a in arqs]
print("ARQ states:", states)
sys.exit(0 if states == ["Bound"] else 1)'
}

function phase_tempest {
    as_stack "cd $STACK_DEST/tempest && .tox/tempest/bin/tempest run \
        --concurrency 1 --regex nova_accel" 2>&1 | tee "$LOG_DIR/tempest.log"
}

function phase_unstack {
    stop_network_stub
    as_stack "cd $STACK_DEST/devstack && ./unstack.sh"
}

# What the run started and unstack.sh leaves running (it stops the
# devstack@ units, and the database and RabbitMQ only where it finds
# them enabled), then the original systemctl back.
function phase_teardown {
    local svc pid
    stop_network_stub
    if [[ -x /usr/bin/systemctl ]]; then
        for svc in $(systemctl list-units --no-legend 'devstack@*' 2>/dev/null |
                awk '{print $1}'); do
            systemctl stop "$svc" || true
        done
        for svc in apache2 memcached rabbitmq-server mariadb mysql postgresql; do
            systemctl stop "$svc" >/dev/null 2>&1 || true
        done
    fi
    # RabbitMQ's epmd outlives the broker; only the one on its port.
    for pid in $(ss -Hltnp 'sport = :4369' | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do
        [[ "$(ps -o user= -p "$pid")" == rabbitmq ]] && kill "$pid"
    done
    # What a failed stack.sh leaves (its log filters, async fifo
    # readers): the stack user is this run's alone.
    for pid in $(ps -o pid= -u "$STACK_USER" 2>/dev/null); do
        kill "$pid" 2>/dev/null || true
    done
    remove_systemctl_standin
    sleep 2
    log_phase "listening after teardown:"
    ss -ltnp | tee -a "$LOG_DIR/phases.log"
    local busy=""
    for port in $PORTS; do
        ss -Hltn "sport = :$port" | grep -q . && busy+=" $port"
    done
    [[ -z "$busy" ]] || die "ports still in use:$busy"
    log_phase "ports free: $PORTS"
}

function run_phase {
    log_phase "start $1"
    local start=$SECONDS rc
    # A subshell with errexit: in a || list bash would ignore it.
    set +o errexit
    (set -o errexit; "phase_$1")
    rc=$?
    set -o errexit
    log_phase "end $1: rc=$rc, $((SECONDS - start))s"
    return $rc
}

[[ $EUID -eq 0 ]] || die "run as root (it creates the stack user)"
if [[ $# -eq 0 ]]; then
    rc=0
    for phase in prepare stack check tempest unstack; do
        run_phase "$phase" || { rc=$?; break; }
    done
    [[ $rc -eq 0 ]] || run_phase unstack || true
    run_phase teardown || rc=$?
    exit $rc
fi
for phase in "$@"; do
    declare -F "phase_$phase" >/dev/null || die "unknown phase $phase"
    run_phase "$phase"
done
