#!/bin/bash
# Stand-ins for the devstack functions devstack/lib/nova-accel and
# devstack/plugin.sh call. The ini functions write real files (through
# ini_tool.py); the others record their arguments in $STUB_CALLS.
# Sourced by tests/aio/test_devstack.py with STUB_DIR, STUB_CALLS set.

function _record {
    echo "$*" >> "$STUB_CALLS"
}

function iniset {
    python3 -S "$STUB_DIR/ini_tool.py" set "$@"
}

function inidelete {
    python3 -S "$STUB_DIR/ini_tool.py" delete "$@"
}

function iniadd {
    python3 -S "$STUB_DIR/ini_tool.py" add "$@"
}

# devstack's real one (lib/keystone): password auth of a service user.
function configure_keystone_authtoken_middleware {
    local conf_file=$1
    local admin_user=$2
    local section=${3:-keystone_authtoken}
    iniset "$conf_file" "$section" auth_type password
    iniset "$conf_file" "$section" interface public
    iniset "$conf_file" "$section" auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$conf_file" "$section" username "$admin_user"
    iniset "$conf_file" "$section" password "$SERVICE_PASSWORD"
    iniset "$conf_file" "$section" user_domain_name "$SERVICE_DOMAIN_NAME"
    iniset "$conf_file" "$section" project_name "$SERVICE_PROJECT_NAME"
    iniset "$conf_file" "$section" project_domain_name "$SERVICE_DOMAIN_NAME"
}

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
function run_process { _record run_process "$@"; }
function stop_process { _record stop_process "$@"; }
function define_plugin { _record define_plugin "$@"; }
function plugin_requires { _record plugin_requires "$@"; }
function enable_service { _record enable_service "$@"; }

# devstack's semantics (functions-common): true when any of the named
# services is in the comma-separated $ENABLED_SERVICES.
function is_service_enabled {
    local service
    for service in "$@"; do
        [[ ,${ENABLED_SERVICES}, =~ ,${service}, ]] && return 0
    done
    return 1
}

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
