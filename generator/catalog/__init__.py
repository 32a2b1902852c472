"""Files to validated records: the catalogs, the price snapshot, the site and its content, checkpoint configs."""
