"""Clients for the site's backing services: object storage and the message broker."""
