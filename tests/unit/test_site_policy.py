"""The Host and Origin rules of registry/http/middleware/sites.py, on their own."""

from __future__ import annotations

from registry.config import Settings
from registry.http.middleware.sites import SitePolicy, host_name


def test_host_names_lose_their_port_brackets_case_and_final_dot() -> None:
    assert host_name("[::1]:8080") == "::1"
    assert host_name("::1") == "::1"
    assert host_name("Example.COM.:443") == "example.com"
    assert host_name("127.0.0.1") == "127.0.0.1"


def test_by_default_the_loopback_names_and_the_public_url_s_host_are_allowed() -> None:
    sites = SitePolicy.of(Settings(host="0.0.0.0", public_url="https://registry.example.com/tdd/"))
    for host in ("localhost:8080", "127.0.0.1", "[::1]:8080", "registry.example.com", "REGISTRY.example.com:443"):
        assert sites.host_allowed(host), host
    for host in ("0.0.0.0", "evil.example", "registry.example.com.evil.example", "10.0.0.1"):
        assert not sites.host_allowed(host), host
    assert sites.host_allowed(None)  # HTTP/1.0 without Host: no browser sends that


def test_the_listening_address_is_allowed_unless_it_is_every_interface() -> None:
    assert SitePolicy.of(Settings(host="192.0.2.7", port=9000)).host_allowed("192.0.2.7:9000")
    assert not SitePolicy.of(Settings(host="::")).host_allowed("[::]:8080")


def test_an_allow_list_replaces_the_defaults_with_names_domains_or_anything() -> None:
    sites = SitePolicy.of(Settings(allowed_hosts=("registry.internal", ".example.org")))
    assert sites.host_allowed("registry.internal:8080")
    assert sites.host_allowed("example.org")
    assert sites.host_allowed("a.b.example.org")
    assert not sites.host_allowed("localhost")
    assert not sites.host_allowed("badexample.org")
    assert SitePolicy.of(Settings(allowed_hosts=("*",))).host_allowed("anything.example")


def test_unsafe_requests_come_from_the_same_origin_the_public_url_or_a_listed_origin() -> None:
    sites = SitePolicy.of(
        Settings(public_url="https://registry.example.com", cors_origins=("https://app.example.com:8443/",))
    )
    assert sites.origin_allowed("http://localhost:8080", "localhost:8080")
    assert sites.origin_allowed("http://127.0.0.1", "127.0.0.1:80")
    assert sites.origin_allowed("https://registry.example.com", "registry-0.internal:8080")
    assert sites.origin_allowed("https://APP.example.com:8443", "registry.example.com")
    assert not sites.origin_allowed("https://app.example.com", "registry.example.com")  # another port
    assert not sites.origin_allowed("http://localhost:9999", "localhost:8080")
    assert not sites.origin_allowed("null", "localhost:8080")
    assert not sites.origin_allowed("http://evil.example", "localhost:8080")
    assert SitePolicy.of(Settings(cors_origins=("*",))).origin_allowed("http://evil.example", "localhost")
