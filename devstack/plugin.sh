#!/bin/bash
# devstack plugin of nova-accel: installs the bundle, runs accel_backend as
# the "accelerator" service (accel-api) or as the agent of a compute node
# (accel-agent), and points Nova at it.

# shellcheck source=devstack/lib/nova-accel
source "$NOVA_ACCEL_DIR/devstack/lib/nova-accel"

if is_service_enabled accel-api accel-agent; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing nova-accel"
        install_nova_accel
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring nova-accel"
        if is_service_enabled accel-api; then
            create_accel_accounts
        fi
        configure_accel_backend
        if is_service_enabled n-cpu n-api n-cond n-sch; then
            configure_nova_for_accel
        fi
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Starting accel_backend"
        if is_service_enabled accel-api; then
            init_accel_backend
        fi
        start_accel_backend
    elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
        if is_service_enabled tempest; then
            echo_summary "Configuring tempest for nova-accel"
            configure_tempest_for_accel
        fi
    fi

    if [[ "$1" == "unstack" ]]; then
        stop_accel_backend
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_accel_backend
    fi
fi
