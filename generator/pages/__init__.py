"""Which pages exist and where, rendered with Jinja templates, Babel and gettext; assets and charts."""
