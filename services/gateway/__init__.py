"""plylog's HTTP gateway: FastAPI app (`app.create_app`), run by `python -m services.gateway`."""
