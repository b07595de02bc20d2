"""Private per-account files on S3: upload, list, preview, download, delete, cleanup."""
