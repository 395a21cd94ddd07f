"""The questions Cloudseat's customers ask most, each with answers that address every phrasing of
it (so answering a different topic is irrelevant, and nothing else is)."""

from __future__ import annotations

from benchmarks.corpus.domain import Faq
from benchmarks.corpus.pools import P

FAQS = [
    Faq(
        "sso",
        P(
            "Do you support single sign-on?",
            "Can we log in with Okta?",
            "How do I set up SSO?",
            "is saml sso available",
        ),
        P(
            "SSO with SAML or OpenID Connect (Okta, Entra ID, Google) is available on Business "
            "and Enterprise plans; set it up under Admin, Security.",
            "Yes, single sign-on works with any SAML 2.0 identity provider such as Okta; owners "
            "enable it in Admin, Security.",
            "Business and Enterprise workspaces can turn on SSO through Okta, Entra ID or Google "
            "in a few minutes.",
            "SSO is supported via SAML and OIDC on the Business plan and above; the setup wizard "
            "is in the admin console.",
        ),
    ),
    Faq(
        "data_export",
        P(
            "How do I export all our data?",
            "Can I download everything from the workspace?",
            "Is there a data export?",
            "export workspace data?",
        ),
        P(
            "Owners can export the whole workspace as a ZIP of files plus JSON metadata from "
            "Settings, Export; large exports are e-mailed as a link.",
            "Yes: Settings, Export creates a full archive of files, boards and comments, usually "
            "within an hour.",
            "Everything can be exported by a workspace owner from Settings; you get a download "
            "link by e-mail.",
            "A full data export is available on every plan from Settings, Export, in ZIP and JSON "
            "format.",
        ),
    ),
    Faq(
        "storage",
        P(
            "How much storage do we get?",
            "What's the storage limit per user?",
            "Can we buy more storage?",
            "storage limits on our plan",
        ),
        P(
            "Starter includes 10 GB per seat, Team 100 GB and Business 1 TB; extra storage is $5 "
            "per 100 GB a month.",
            "Storage is pooled across the workspace: 100 GB per seat on Team, 1 TB on Business, "
            "with add-on packs available.",
            "Each seat adds storage to the shared pool (10 GB Starter, 100 GB Team, 1 TB "
            "Business); more can be bought in Billing.",
            "Your limit depends on the plan, from 10 GB to 1 TB per seat, and you can add "
            "storage packs anytime.",
        ),
    ),
    Faq(
        "guests",
        P(
            "Can I invite people from outside the company?",
            "Do guests need a paid seat?",
            "How does guest access work?",
            "external collaborators?",
        ),
        P(
            "Guests are free: invite people outside your domain to specific projects, and they "
            "don't take a paid seat.",
            "You can add unlimited free guests who only see the projects you share with them.",
            "External collaborators join as guests at no cost, with access limited to the "
            "projects they're invited to.",
            "Guest access is included on all plans; guests can comment and edit but can't see "
            "the rest of the workspace.",
        ),
    ),
    Faq(
        "billing_cycle",
        P(
            "When are we billed?",
            "Can we pay yearly instead of monthly?",
            "How does billing work for new seats?",
            "billing cycle options",
        ),
        P(
            "You can pay monthly or annually (two months free); new seats are charged pro rata "
            "for the rest of the billing period.",
            "Billing runs monthly by default, and switching to annual saves about 17%; added "
            "seats are prorated.",
            "Invoices are issued on your renewal date each month or year, and seats added "
            "mid-period are charged pro rata.",
            "Choose monthly or yearly billing in Settings; mid-cycle seat changes are prorated "
            "automatically.",
        ),
    ),
    Faq(
        "refund_policy",
        P(
            "Do you give refunds if we cancel?",
            "Can I get my money back for unused months?",
            "What's your refund policy?",
            "refunds on annual plans?",
        ),
        P(
            "Monthly plans aren't refunded but run until the period ends; annual plans can be "
            "refunded pro rata within 30 days of renewal.",
            "If you cancel, you keep access until the end of the paid period; annual renewals "
            "cancelled within 30 days get a prorated refund.",
            "Refunds are given for annual subscriptions cancelled in the first 30 days after "
            "renewal; monthly plans simply stop renewing.",
            "Our policy: no refunds on monthly plans, prorated refunds for annual plans within "
            "30 days of the renewal date.",
        ),
    ),
    Faq(
        "uptime",
        P(
            "What uptime do you guarantee?",
            "Is there an SLA?",
            "What happens if the service goes down?",
            "uptime sla?",
        ),
        P(
            "Business and Enterprise plans include a 99.9% uptime SLA with service credits if we "
            "miss it; live status is on our status page.",
            "We guarantee 99.9% monthly uptime on Business plans and above, and credit your "
            "invoice when we fall short.",
            "Our SLA promises 99.9% availability; outages are posted on the status page and "
            "credited under the SLA terms.",
            "The uptime commitment is 99.9% per month for Business and Enterprise, backed by "
            "service credits.",
        ),
    ),
    Faq(
        "mobile_apps",
        P(
            "Is there a mobile app?",
            "Can I use Cloudseat on my phone?",
            "Do you have an Android app?",
            "iphone app?",
        ),
        P(
            "Yes, Cloudseat has free apps for iOS and Android with offline files and "
            "notifications, included on every plan.",
            "You can use Cloudseat on your phone with our iPhone and Android apps; sign in with "
            "your usual account.",
            "Our mobile apps for iOS and Android let you view, edit and comment, even offline.",
            "The Cloudseat app is available on the App Store and Google Play at no extra cost.",
        ),
    ),
]
