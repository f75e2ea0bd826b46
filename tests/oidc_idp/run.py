"""`python -m tests.oidc_idp.run PORT REDIRECT_URI USER...`: the test identity provider on
127.0.0.1:PORT, with the client `isthmus` (secret `isthmus-secret`) that may send browsers back
to REDIRECT_URI, and users given as name:password:group,group. Its database and signing key
live in IDP_DIR (made anew)."""

import os
import sys
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID, CLIENT_SECRET = "isthmus", "isthmus-secret"  # noqa: S105 (the test provider's)


def main() -> None:
    port, redirect_uri, *people = sys.argv[1:]
    folder = Path(os.environ["IDP_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    (folder / "idp.sqlite3").unlink(missing_ok=True)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="tests.oidc_idp.settings",
        IDP_DB=str(folder / "idp.sqlite3"),
        IDP_KEY=str(folder / "key.pem"),
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.contrib.auth.models import Group, User
    from oauth2_provider.models import Application

    for person in people:
        name, password, groups = person.split(":")
        user = User.objects.create_user(name, f"{name}@example.com", password)
        for group in filter(None, groups.split(",")):
            user.groups.add(Group.objects.get_or_create(name=group)[0])
    Application.objects.create(
        name="Isthmus",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=redirect_uri,
        skip_authorization=True,
        algorithm=Application.RS256_ALGORITHM,
    )
    call_command("runserver", f"127.0.0.1:{port}", use_reloader=False, verbosity=0)


if __name__ == "__main__":
    main()
