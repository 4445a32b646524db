"""keystoneauth1 adapters for the services accel_backend calls."""

from keystoneauth1 import loading as ks_loading


def adapter_from_conf(conf, group, service_type, auth=None, **kwargs):
    """A keystoneauth1 ``Adapter`` built from the options of ``group``.

    :param conf: accel_backend ``ConfigOpts`` with the keystoneauth session,
        auth and adapter options registered in ``group`` (``placement``,
        ``nova``).
    :param service_type: service catalog type (``placement``, ``compute``).
    :param auth: a keystoneauth1 auth plugin overriding the configured one.
    :param kwargs: more ``Adapter`` arguments (``default_microversion``).
    :raises keystoneauth1.exceptions.auth_plugins.MissingAuthPlugin: no
        ``auth_type`` configured and no ``auth`` given.
    """
    auth = auth or ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(conf, group,
                                                        auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth, service_type=service_type,
        **kwargs)
