#!/bin/bash
# devstack plugin of nova-accel: installs the bundle, runs accel_backend as
# the "accelerator" service and points Nova at it.

# shellcheck source=devstack/lib/nova-accel
source "$NOVA_ACCEL_DIR/devstack/lib/nova-accel"

if [[ "$1" == "stack" && "$2" == "install" ]]; then
    echo_summary "Installing nova-accel"
    install_nova_accel
elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
    echo_summary "Configuring nova-accel"
    create_accel_accounts
    configure_accel_backend
    configure_nova_for_accel
elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
    echo_summary "Starting accel_backend"
    init_accel_backend
    start_accel_backend
elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
    echo_summary "Configuring tempest for nova-accel"
    configure_tempest_for_accel
fi

if [[ "$1" == "unstack" ]]; then
    stop_accel_backend
fi

if [[ "$1" == "clean" ]]; then
    cleanup_accel_backend
fi
