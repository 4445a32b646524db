#!/bin/bash
# The devstack that tests/aio/test_devstack.py runs the plugin in, sourced
# with STUB_DIR, STUB_CALLS, NOVA_ACCEL_DIR set.
#
# With NOVA_ACCEL_DEVSTACK_DIR (a devstack checkout): devstack's own
# functions (functions, lib/database, lib/keystone, lib/nova), with
# lib/nova's fixed paths (/etc/nova) replaced by the test's. Without it:
# stand-ins below with devstack's semantics (master: functions-common,
# inc/ini-config, lib/nova, lib/keystone, lib/tempest); the ini functions
# write real files through ini_tool.py.
#
# Either way the functions that reach outside the machine's files
# (Keystone, the database server, pip, stack.sh's output) record their
# arguments in $STUB_CALLS instead, and $SYSTEMCTL is the test's recorder.

function _record {
    echo "$*" >> "$STUB_CALLS"
}

if [[ -n "${NOVA_ACCEL_DEVSTACK_DIR:-}" ]]; then
    # shellcheck disable=SC2034 # read by devstack's functions
    TOP_DIR=$NOVA_ACCEL_DEVSTACK_DIR
    _test_nova_paths=("$NOVA_CONF_DIR" "$NOVA_CONF" "$NOVA_CPU_CONF")
    # shellcheck source=/dev/null
    source "$TOP_DIR/functions"
    # shellcheck source=/dev/null
    source "$TOP_DIR/lib/database"
    # shellcheck source=/dev/null
    source "$TOP_DIR/lib/keystone"
    # shellcheck source=/dev/null
    source "$TOP_DIR/lib/nova"
    NOVA_CONF_DIR=${_test_nova_paths[0]}
    NOVA_CONF=${_test_nova_paths[1]}
    NOVA_CPU_CONF=${_test_nova_paths[2]}
    # What enable_plugin nova-accel records (functions-common).
    # shellcheck disable=SC2034
    DEVSTACK_PLUGINS=nova-accel
    # shellcheck disable=SC2034
    GITDIR["nova-accel"]=$NOVA_ACCEL_DIR
else
    function iniset {
        python3 -S "$STUB_DIR/ini_tool.py" set "$@"
    }

    function inidelete {
        python3 -S "$STUB_DIR/ini_tool.py" delete "$@"
    }

    function iniget {
        python3 -S "$STUB_DIR/ini_tool.py" get "$@"
    }

    # inc/ini-config: one line right under the (existing) section's
    # header, the value as it is.
    function iniadd_literal {
        python3 -S "$STUB_DIR/ini_tool.py" insert "$@"
    }

    # functions-common: "[fd00::1]" -> "fd00::1".
    function ipv6_unquote {
        echo "$1" | tr -d '[]'
    }

    # functions-common: true when any of the named services is in the
    # comma-separated $ENABLED_SERVICES.
    function is_service_enabled {
        local service
        for service in "$@"; do
            [[ ,${ENABLED_SERVICES}, =~ ,${service}, ]] && return 0
        done
        return 1
    }

    # functions-common: adds to $ENABLED_SERVICES what local.conf did not
    # disable_service.
    function enable_service {
        local service
        for service in "$@"; do
            if [[ ,${DISABLED_SERVICES:-}, =~ ,${service}, ]]; then
                continue
            fi
            is_service_enabled "$service" || ENABLED_SERVICES+=",$service"
        done
    }

    # functions-common: takes the services out of $ENABLED_SERVICES for
    # good (enable_service will not add them back).
    function disable_service {
        local service
        for service in "$@"; do
            DISABLED_SERVICES="${DISABLED_SERVICES:-},$service"
            ENABLED_SERVICES=$(echo ",$ENABLED_SERVICES," |
                sed -e "s/,$service,/,/g" -e 's/^,//' -e 's/,$//')
        done
    }

    # functions-common: run_process service command group user; a
    # systemd unit devstack@<service>.service in $SYSTEMD_DIR, run as
    # $STACK_USER unless user is given.
    function run_process {
        local service=$1
        local command=$2
        local group=${3:-}
        local user=${4:-}
        local unit="$SYSTEMD_DIR/devstack@$service.service"
        [[ -n "$user" ]] || user=$STACK_USER
        is_service_enabled "$service" || return 0
        mkdir -p "$SYSTEMD_DIR"
        iniset "$unit" Service User "$user"
        iniset "$unit" Service ExecStart "$command"
        [[ -z "$group" ]] || iniset "$unit" Service Group "$group"
        $SYSTEMCTL start "devstack@$service.service"
    }

    function stop_process {
        if is_service_enabled "$1"; then
            $SYSTEMCTL stop "devstack@$1.service"
        fi
    }

    # lib/keystone: keystoneauth options of a service user.
    function configure_keystoneauth {
        local conf_file=$1
        local admin_user=$2
        local section=$3
        iniset "$conf_file" "$section" auth_type password
        iniset "$conf_file" "$section" interface public
        iniset "$conf_file" "$section" auth_url "$KEYSTONE_SERVICE_URI"
        iniset "$conf_file" "$section" username "$admin_user"
        iniset "$conf_file" "$section" password "$SERVICE_PASSWORD"
        iniset "$conf_file" "$section" user_domain_name "$SERVICE_DOMAIN_NAME"
        iniset "$conf_file" "$section" project_name "$SERVICE_PROJECT_NAME"
        iniset "$conf_file" "$section" project_domain_name "$SERVICE_DOMAIN_NAME"
    }

    # lib/keystone: keystoneauth options and the auth_token middleware's.
    function configure_keystone_authtoken_middleware {
        local conf_file=$1
        local section=${3:-keystone_authtoken}
        configure_keystoneauth "$conf_file" "$2" "$section"
        iniset "$conf_file" "$section" www_authenticate_uri "$KEYSTONE_SERVICE_URI"
    }

    # lib/nova: the configuration file of cell $1's conductor.
    function conductor_conf {
        echo "${NOVA_CONF_DIR}/nova_cell${1}.conf"
    }
    NOVA_NUM_CELLS=${NOVA_NUM_CELLS:-1}

    # lib/database: the backends it knows (lib/databases/*).
    DATABASE_BACKENDS=" mysql postgresql"

    # functions-common's run_phase source: extras.d/80-tempest.sh sources
    # lib/tempest (TEMPEST_PLUGINS defaults to 0), then the plugins'
    # settings.
    function run_phase {
        [[ "$1" == "source" ]] || return 1
        if is_service_enabled tempest; then
            TEMPEST_PLUGINS=${TEMPEST_PLUGINS:-0}
        fi
        # shellcheck source=devstack/settings
        source "$NOVA_ACCEL_DIR/devstack/settings"
    }

    # functions-common: each plugin's plugin.sh with mode and phase.
    function run_plugins {
        # shellcheck source=devstack/plugin.sh
        source "$NOVA_ACCEL_DIR/devstack/plugin.sh" "$@"
    }

    # lib/tempest: pip install $TEMPEST_PLUGINS into tempest's venv.
    function install_tempest_plugins {
        if [[ "$TEMPEST_PLUGINS" != 0 ]]; then
            # shellcheck disable=SC2086 # a list of requirements
            tox -evenv-tempest -- pip install -c "$TEMPEST_VENV_UPPER_CONSTRAINTS" $TEMPEST_PLUGINS
        fi
    }
fi

# Outside the machine's files: Keystone, the database server, pip.
function database_connection_url {
    echo "mysql+pymysql://root:secret@127.0.0.1/$1?charset=utf8"
}

function sudo { "$@"; }
function echo_summary { _record echo_summary "$@"; }
function setup_package { _record setup_package "$@"; }
function create_service_user { _record create_service_user "$@"; }
function get_or_add_user_project_role { _record get_or_add_user_project_role "$@"; }
function get_or_create_service { _record get_or_create_service "$@"; }
function get_or_create_endpoint { _record get_or_create_endpoint "$@"; }
function recreate_database { _record recreate_database "$@"; }
function define_plugin { _record define_plugin "$@"; }
function enable_plugin { _record enable_plugin "$@"; }
function plugin_requires { _record plugin_requires "$@"; }

# devstack's lib/rpc_backend: the transport_url of the cloud's RabbitMQ.
function iniset_rpc_backend {
    _record iniset_rpc_backend "$@"
    iniset "$2" "${3:-DEFAULT}" transport_url "rabbit://stackrabbit:secret@192.0.2.10:5672/"
}

# What devstack's start_nova_compute (lib/nova) does to nova-cpu.conf
# after the post-config phase: copy nova.conf over it.
function devstack_start_nova_compute_conf {
    cp "$NOVA_CONF" "$NOVA_CPU_CONF"
}
