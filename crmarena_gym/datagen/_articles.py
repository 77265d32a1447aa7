"""Knowledge articles other than policies: store FAQs and product guides, each built from facts.

A fact is ``(question, answer, sentence)``: the sentence holds the answer verbatim, so a
knowledge-QA task can ask the question and score the short answer against the article text.
``{company}`` in any string is replaced by the store's name.
"""

from __future__ import annotations

from typing import Any

Fact = tuple[str, str, str]

#: Store-wide FAQ articles: (title, summary, intro, facts).
GENERAL_ARTICLES: tuple[tuple[str, str, str, tuple[Fact, ...]], ...] = (
    (
        "Shipping Options and Delivery Times at {company}",
        "Delivery speeds, costs and cut-off times for online orders.",
        "{company} ships every online order from one of three regional warehouses.",
        (
            (
                "How long does standard shipping take?",
                "5 to 7 business days",
                "Standard shipping takes 5 to 7 business days after the order leaves the warehouse.",
            ),
            (
                "How much does express shipping cost?",
                "$14.95",
                "Express shipping arrives in 2 business days and costs $14.95 per order.",
            ),
            (
                "What order total qualifies for free standard shipping?",
                "orders over $75",
                "Standard shipping is free on orders over $75 before tax.",
            ),
            (
                "By what time must an order be placed to ship the same day?",
                "2 p.m. Eastern",
                "Orders placed before 2 p.m. Eastern on a business day leave the warehouse the same day.",
            ),
            (
                "Which items cannot be shipped to a PO box?",
                "oversized items such as dumbbells and sleeping bags",
                "We cannot ship oversized items such as dumbbells and sleeping bags to a PO box.",
            ),
        ),
    ),
    (
        "Tracking Your {company} Order",
        "Where to find tracking details and what to do when they do not update.",
        "Every shipment gets a tracking number from the carrier.",
        (
            (
                "When is the tracking link emailed?",
                "within 24 hours of shipment",
                "A tracking link is emailed within 24 hours of shipment.",
            ),
            (
                "How long can it take for tracking updates to appear?",
                "up to 48 hours",
                "New tracking numbers can take up to 48 hours to show their first scan.",
            ),
            (
                "Where in the account can customers see order status?",
                "the Orders page",
                "Signed-in customers can see the status of every order on the Orders page.",
            ),
            (
                "When should a customer contact support about a package marked delivered but missing?",
                "after 48 hours",
                "If a package is marked delivered but missing, check with neighbours and contact support after "
                "48 hours.",
            ),
        ),
    ),
    (
        "Payment Methods Accepted by {company}",
        "Cards, wallets and instalment plans accepted for online orders.",
        "{company} accepts the payment methods below for all online orders.",
        (
            (
                "Which card networks does the store accept?",
                "Visa, Mastercard, American Express and Discover",
                "We accept Visa, Mastercard, American Express and Discover credit and debit cards.",
            ),
            (
                "What is the minimum order for paying in four instalments?",
                "$100",
                "Orders of $100 or more can be paid in four interest-free instalments.",
            ),
            (
                "How does a store charge appear on a bank statement?",
                "NORTHPK ATHLETIC",
                "Charges appear on bank statements as NORTHPK ATHLETIC.",
            ),
            (
                "How many gift cards can be used on one order?",
                "up to three gift cards",
                "Customers can combine up to three gift cards on one order.",
            ),
        ),
    ),
    (
        "{company} Gift Cards",
        "Buying, using and replacing gift cards.",
        "Gift cards can be bought online and used on any product.",
        (
            (
                "In what values are gift cards sold?",
                "from $25 to $500",
                "Gift cards are sold in values from $25 to $500.",
            ),
            (
                "Do gift cards expire?",
                "never expire",
                "Our gift cards never expire and carry no fees.",
            ),
            (
                "Can gift cards be redeemed for cash?",
                "cannot be redeemed for cash",
                "Gift cards cannot be redeemed for cash except where the law requires it.",
            ),
            (
                "What is needed to replace a lost gift card?",
                "the original purchase receipt",
                "A lost gift card can be replaced with the original purchase receipt.",
            ),
        ),
    ),
    (
        "Finding Your Size: The {company} Fit Guide",
        "How to measure for footwear and apparel, and how our sizes run.",
        "Getting the size right the first time saves you an exchange.",
        (
            (
                "When is the best time of day to measure your feet?",
                "in the evening",
                "Measure your feet in the evening, when they are at their largest.",
            ),
            (
                "What should runners between two sizes do?",
                "go a half size up",
                "Runners between two sizes should go a half size up in running shoes.",
            ),
            (
                "How much room should kids' shoes leave at the toe?",
                "a thumb's width",
                "Kids' shoes should leave a thumb's width of room at the toe.",
            ),
            (
                "How do the store's leggings fit?",
                "true to size",
                "Our leggings run true to size; compression styles feel snug by design.",
            ),
        ),
    ),
    (
        "Caring for Your Athletic Apparel",
        "Washing and drying technical fabrics so they keep performing.",
        "Technical fabrics last longer with a little care.",
        (
            (
                "What water temperature should technical apparel be washed in?",
                "cold water",
                "Wash technical apparel inside out in cold water.",
            ),
            (
                "Why should fabric softener be avoided on performance fabrics?",
                "it clogs the moisture-wicking fibres",
                "Skip fabric softener, because it clogs the moisture-wicking fibres.",
            ),
            (
                "How should performance apparel be dried?",
                "hang it to dry",
                "Tumble drying shrinks elastic, so hang it to dry instead.",
            ),
            (
                "How often should compression garments be replaced?",
                "every six months",
                "Compression garments lose their support and should be replaced every six months of regular use.",
            ),
        ),
    ),
    (
        "Contacting {company} Customer Support",
        "Support channels and their opening hours.",
        "Our service team helps with orders, returns and product questions.",
        (
            (
                "When is live chat available?",
                "7 a.m. to 10 p.m. Eastern every day",
                "Live chat is staffed from 7 a.m. to 10 p.m. Eastern every day.",
            ),
            (
                "How quickly are support emails answered?",
                "within 24 hours",
                "Emails to our support team are answered within 24 hours.",
            ),
            (
                "What is the support phone number?",
                "1-800-555-0142",
                "Phone support is available on weekdays at 1-800-555-0142.",
            ),
            (
                "Which channel gets the fastest answer?",
                "live chat",
                "For the fastest answer, use live chat.",
            ),
        ),
    ),
    (
        "Buy Online, Pick Up In Store",
        "How store pickup works and how long orders are held.",
        "Many orders can be collected from a {company} store near you.",
        (
            (
                "How soon is a pickup order usually ready?",
                "within 2 hours",
                "Most pickup orders are ready within 2 hours of being placed.",
            ),
            (
                "How long does the store hold a pickup order?",
                "7 days",
                "We hold a pickup order for 7 days before cancelling and refunding it.",
            ),
            (
                "What should customers bring to collect a pickup order?",
                "a photo ID and the order confirmation",
                "Bring a photo ID and the order confirmation when you collect.",
            ),
        ),
    ),
    (
        "The {company} Price Match Promise",
        "When we match a competitor's price and what is excluded.",
        "Found the same item for less? We may match it.",
        (
            (
                "Within how many days of purchase can a price match be requested?",
                "14 days",
                "A price match can be requested within 14 days of purchase.",
            ),
            (
                "Which sellers are excluded from price matching?",
                "marketplace sellers",
                "Prices from marketplace sellers and auction sites are excluded.",
            ),
            (
                "What must be identical for a price match?",
                "the same model, colour and size",
                "The competitor's item must be the same model, colour and size, and in stock.",
            ),
        ),
    ),
    (
        "{company} Rewards Tiers and Member Benefits",
        "The three membership tiers and what each one unlocks.",
        "Membership in {company} Rewards is free.",
        (
            (
                "How many points a year are needed for Silver status?",
                "500 points",
                "Members who earn 500 points in a calendar year reach Silver status.",
            ),
            (
                "How many points a year are needed for Gold status?",
                "1,500 points",
                "Gold status requires 1,500 points in a calendar year.",
            ),
            (
                "What shipping benefit do Gold members get?",
                "free express shipping",
                "Gold members get free express shipping on every order.",
            ),
            (
                "How many points is the birthday reward?",
                "200 points",
                "Every member receives a birthday reward of 200 points.",
            ),
        ),
    ),
    (
        "Keeping Your {company} Account Secure",
        "Passwords, sign-in protection and what we will never ask you.",
        "Your account holds your orders and rewards, so keep it safe.",
        (
            (
                "How long is a password reset link valid?",
                "30 minutes",
                "A password reset link is valid for 30 minutes.",
            ),
            (
                "What does two-factor authentication use?",
                "an authenticator app",
                "Two-factor authentication uses an authenticator app on your phone.",
            ),
            (
                "After how many failed sign-in attempts is an account locked?",
                "five failed attempts",
                "An account is locked for an hour after five failed attempts.",
            ),
        ),
    ),
)

#: Per category (same order as ``CATEGORIES``): two guides, each (title, summary, facts).
CATEGORY_GUIDES: tuple[tuple[tuple[str, str, tuple[Fact, ...]], ...], ...] = (
    (
        (
            "Choosing Running Shoes: Cushioning, Drop and Fit",
            "How to pick running shoes for your stride and your distance.",
            (
                (
                    "What heel-to-toe drop suits runners who land on the forefoot?",
                    "a low drop of 4 mm or less",
                    "Forefoot strikers usually prefer a low drop of 4 mm or less.",
                ),
                (
                    "Which shoes help runners who overpronate?",
                    "stability running shoes",
                    "Runners who overpronate get more support from stability running shoes.",
                ),
                (
                    "What do carbon-plated racing shoes add?",
                    "a stiff carbon plate that returns energy",
                    "Racing shoes add a stiff carbon plate that returns energy at toe-off.",
                ),
            ),
        ),
        (
            "Making Your Running Shoes Last",
            "Mileage, rotation and cleaning tips for running footwear.",
            (
                (
                    "After how many miles should running shoes be replaced?",
                    "every 300 to 500 miles",
                    "Replace running shoes every 300 to 500 miles, before the midsole loses its rebound.",
                ),
                (
                    "How long should foam midsoles rest between runs?",
                    "24 hours",
                    "Rotating two pairs gives foam midsoles 24 hours to recover between runs.",
                ),
                (
                    "How should wet running shoes be dried?",
                    "stuffed with newspaper at room temperature",
                    "Dry wet shoes stuffed with newspaper at room temperature, never on a radiator.",
                ),
            ),
        ),
    ),
    (
        (
            "Styling Lifestyle Sneakers",
            "Picking everyday sneakers that look good and stay comfortable.",
            (
                (
                    "Which sneaker material needs the least upkeep?",
                    "canvas",
                    "For the least upkeep, choose canvas, which can be hand-washed.",
                ),
                (
                    "What gives retro sneakers their cushioning?",
                    "a cupsole with a foam insert",
                    "Our retro sneakers use a cupsole with a foam insert for all-day comfort.",
                ),
                (
                    "How should high-top sneakers be laced for ankle comfort?",
                    "leave the top eyelet open",
                    "For ankle comfort in high-tops, leave the top eyelet open.",
                ),
            ),
        ),
        (
            "Cleaning Leather and Suede Sneakers",
            "Keeping casual sneakers clean without damaging them.",
            (
                (
                    "What should be used to clean suede sneakers?",
                    "a suede brush and eraser",
                    "Clean suede with a suede brush and eraser, never with water.",
                ),
                (
                    "How often should leather sneakers be conditioned?",
                    "once a month",
                    "Condition leather sneakers once a month to prevent cracking.",
                ),
                (
                    "Can sneakers go in the washing machine?",
                    "canvas pairs only, on a cold gentle cycle",
                    "Machine washing suits canvas pairs only, on a cold gentle cycle.",
                ),
            ),
        ),
    ),
    (
        (
            "Women's Activewear: Support and Comfort",
            "Choosing sports bras, leggings and tops for each kind of workout.",
            (
                (
                    "Which sports bra support level suits running?",
                    "high support",
                    "Running and jumping call for a high support sports bra.",
                ),
                (
                    "What keeps the store's women's tops dry?",
                    "moisture-wicking fabric",
                    "Our women's tops use moisture-wicking fabric that moves sweat away from the skin.",
                ),
                (
                    "What stops leggings from going sheer?",
                    "a squat-proof double-knit fabric",
                    "Training leggings use a squat-proof double-knit fabric that stays opaque.",
                ),
            ),
        ),
        (
            "Caring for Sports Bras and Leggings",
            "Washing routines that keep stretch fabrics supportive.",
            (
                (
                    "How should sports bras be washed?",
                    "in a mesh laundry bag",
                    "Wash sports bras in a mesh laundry bag so the straps do not stretch.",
                ),
                (
                    "How often should a sports bra be replaced?",
                    "every 6 to 12 months",
                    "Replace a sports bra every 6 to 12 months, when the band loses its grip.",
                ),
                (
                    "What weakens spandex fibres?",
                    "high heat",
                    "Avoid the dryer, because high heat weakens spandex fibres.",
                ),
            ),
        ),
    ),
    (
        (
            "Men's Training Gear: What to Wear for Each Workout",
            "Fabrics and fits for lifting, running and court sports.",
            (
                (
                    "Which fabric suits hot-weather training tees?",
                    "polyester mesh",
                    "In hot weather, polyester mesh tees vent heat fastest.",
                ),
                (
                    "What inseam do the store's training shorts have?",
                    "7 inches",
                    "Our training shorts have a 7 inches inseam that does not ride up during squats.",
                ),
                (
                    "What does a compression shirt help with?",
                    "muscle vibration and recovery",
                    "A compression shirt reduces muscle vibration and recovery time after hard sessions.",
                ),
            ),
        ),
        (
            "Running Jackets for Men: Wind, Rain and Visibility",
            "How to choose and care for a running jacket.",
            (
                (
                    "What makes running jackets visible at night?",
                    "reflective trims",
                    "Running jackets carry reflective trims on the chest and back for night runs.",
                ),
                (
                    "How is the water repellency of a jacket restored?",
                    "tumble it on low heat for 20 minutes",
                    "To restore water repellency, tumble it on low heat for 20 minutes after washing.",
                ),
                (
                    "Where do running jackets vent heat?",
                    "through a back yoke vent",
                    "They vent heat through a back yoke vent without letting rain in.",
                ),
            ),
        ),
    ),
    (
        (
            "Layering for Cold Weather: Outdoor Apparel Essentials",
            "Base, mid and outer layers for winter days outside.",
            (
                (
                    "What is the job of a base layer?",
                    "moving sweat away from the skin",
                    "A base layer's job is moving sweat away from the skin.",
                ),
                (
                    "What fill gives the best warmth for its weight?",
                    "down fill",
                    "For warmth per ounce, nothing beats down fill.",
                ),
                (
                    "Down to what temperature is the insulated parka rated?",
                    "-20 degrees Fahrenheit",
                    "Our insulated parka is rated down to -20 degrees Fahrenheit.",
                ),
            ),
        ),
        (
            "Rain Jackets Explained: Waterproof Ratings",
            "What waterproof ratings mean and how to keep a shell working.",
            (
                (
                    "What waterproof rating do the store's rain jackets have?",
                    "20,000 mm",
                    "Our rain jackets are rated to 20,000 mm of water pressure.",
                ),
                (
                    "What keeps water from entering at the seams?",
                    "fully taped seams",
                    "Our shells use fully taped seams to keep water from entering at the stitching.",
                ),
                (
                    "Which detergent should be used on waterproof shells?",
                    "a technical wash",
                    "Wash waterproof shells with a technical wash, not regular detergent.",
                ),
            ),
        ),
    ),
    (
        (
            "Packing a Hiking Backpack",
            "Choosing a pack size and loading it for balance.",
            (
                (
                    "What pack size suits a day hike?",
                    "20 to 30 liters",
                    "For a day hike, a pack of 20 to 30 liters is enough.",
                ),
                (
                    "Where should the heaviest items go in a backpack?",
                    "close to your back, at shoulder-blade height",
                    "Pack the heaviest items close to your back, at shoulder-blade height.",
                ),
                (
                    "How much of the load should the hip belt carry?",
                    "about 80 percent",
                    "A well-fitted hip belt carries about 80 percent of the load.",
                ),
            ),
        ),
        (
            "Caring for Hiking Boots and Trekking Poles",
            "Keeping boots waterproof and poles secure.",
            (
                (
                    "How often should hiking boots be re-waterproofed?",
                    "every 3 to 4 months of use",
                    "Re-waterproof leather hiking boots every 3 to 4 months of use.",
                ),
                (
                    "How long should new hiking boots be broken in?",
                    "about 20 miles",
                    "Break in new boots for about 20 miles before a long trip.",
                ),
                (
                    "What should be checked on trekking poles before a hike?",
                    "the locking mechanisms",
                    "Before each hike, check the locking mechanisms so the poles do not collapse.",
                ),
            ),
        ),
    ),
    (
        (
            "Choosing a Yoga Mat",
            "Thickness, grip and materials for every style of practice.",
            (
                (
                    "What mat thickness suits most practices?",
                    "4 to 6 mm",
                    "A mat of 4 to 6 mm suits most practices.",
                ),
                (
                    "Which mat material gives the best grip when wet?",
                    "natural rubber",
                    "For grip in hot yoga, natural rubber grips best when wet.",
                ),
                (
                    "What are cork yoga blocks good for?",
                    "stable support in balancing poses",
                    "Cork blocks give stable support in balancing poses.",
                ),
            ),
        ),
        (
            "Cleaning and Storing Yoga Gear",
            "Keeping mats, straps and cushions fresh.",
            (
                (
                    "What should a yoga mat be cleaned with?",
                    "a mild soap and water solution",
                    "Clean the mat with a mild soap and water solution after practice.",
                ),
                (
                    "Why should rubber mats be kept out of sunlight?",
                    "UV light breaks down rubber",
                    "Store rubber mats away from windows, because UV light breaks down rubber.",
                ),
                (
                    "How should a yoga mat be stored?",
                    "rolled with the top side out",
                    "Store a mat rolled with the top side out so the edges lie flat.",
                ),
            ),
        ),
    ),
    (
        (
            "Swim Training Tools: Fins, Kickboards and Goggles",
            "Using training aids to swim faster with better form.",
            (
                (
                    "How do swim fins improve technique?",
                    "by keeping the ankles extended",
                    "Fins improve technique by keeping the ankles extended through the kick.",
                ),
                (
                    "What do anti-fog goggles need to stay clear?",
                    "rinsing in cold water only",
                    "Anti-fog lenses stay clear with rinsing in cold water only; never wipe the inside.",
                ),
                (
                    "What is a kickboard used for?",
                    "isolating the legs",
                    "A kickboard is used for isolating the legs during drills.",
                ),
            ),
        ),
        (
            "Making Swimwear Last in Chlorine",
            "How chlorine damages swim gear and how to prevent it.",
            (
                (
                    "What should swimwear be rinsed in after every swim?",
                    "fresh cold water",
                    "Rinse swimwear in fresh cold water after every swim.",
                ),
                (
                    "Which swimsuit fabric resists chlorine best?",
                    "chlorine-resistant polyester",
                    "For daily training, chlorine-resistant polyester outlasts spandex suits.",
                ),
                (
                    "How should silicone swim caps be stored?",
                    "dusted with talc",
                    "Store silicone caps dry and dusted with talc so they do not stick.",
                ),
            ),
        ),
    ),
    (
        (
            "Cycling Apparel and Protection",
            "Jerseys, bib shorts and helmets for the road.",
            (
                (
                    "After how long should a cycling helmet be replaced?",
                    "every five years",
                    "Replace a cycling helmet every five years, or after any crash.",
                ),
                (
                    "What makes bib shorts comfortable on long rides?",
                    "a padded chamois",
                    "On long rides, a padded chamois prevents saddle soreness.",
                ),
                (
                    "Why do cycling jerseys have rear pockets?",
                    "to carry food and tools",
                    "The three rear pockets are there to carry food and tools.",
                ),
            ),
        ),
        (
            "Riding After Dark: Bike Lights and Visibility",
            "Lighting rules and tips for riding at night.",
            (
                (
                    "How bright should a front light be for unlit roads?",
                    "at least 400 lumens",
                    "For unlit roads, use a front light of at least 400 lumens.",
                ),
                (
                    "Which light mode is best in daytime?",
                    "flashing mode",
                    "In daytime, flashing mode makes riders most noticeable.",
                ),
                (
                    "How long does the bike lights set run on one charge?",
                    "up to 6 hours",
                    "Our bike lights set runs for up to 6 hours on one charge.",
                ),
            ),
        ),
    ),
    (
        (
            "Choosing Soccer Cleats for Your Surface",
            "Stud patterns for firm ground, artificial grass and indoor courts.",
            (
                (
                    "Which cleats suit natural grass pitches?",
                    "firm-ground cleats",
                    "On natural grass, firm-ground cleats give the best traction.",
                ),
                (
                    "Which studs should be used on artificial turf?",
                    "short rubber studs",
                    "Artificial turf calls for short rubber studs to protect the knees.",
                ),
                (
                    "What size soccer ball do adults use?",
                    "size 5",
                    "Adult matches use a size 5 ball.",
                ),
            ),
        ),
        (
            "Basketball Shoes and Balls: Performance and Care",
            "Traction, support and inflation for the court.",
            (
                (
                    "Why should basketball shoes be kept for the court?",
                    "outdoor use wears down the traction pattern",
                    "Keep them for the court, because outdoor use wears down the traction pattern.",
                ),
                (
                    "To what pressure should a basketball be inflated?",
                    "7.5 to 8.5 psi",
                    "Inflate a basketball to 7.5 to 8.5 psi.",
                ),
                (
                    "What do high-top basketball shoes support?",
                    "the ankle during lateral cuts",
                    "High-tops support the ankle during lateral cuts.",
                ),
            ),
        ),
    ),
    (
        (
            "Golf Gear for Better Rounds",
            "Shoes, gloves and putters that help your game.",
            (
                (
                    "What technology do the store's golf shoes use?",
                    "waterproof leather and spikeless traction soles",
                    "Our golf shoes combine waterproof leather and spikeless traction soles.",
                ),
                (
                    "How should a golf glove fit?",
                    "snug with no loose fabric at the fingertips",
                    "A golf glove should fit snug with no loose fabric at the fingertips.",
                ),
                (
                    "What putter length suits most golfers?",
                    "33 to 35 inches",
                    "Most golfers putt best with a putter of 33 to 35 inches.",
                ),
            ),
        ),
        (
            "Caring for Golf Shoes and Gloves",
            "Keeping your golf gear in shape between rounds.",
            (
                (
                    "How should wet golf gloves be dried?",
                    "flat, away from direct heat",
                    "Dry wet gloves flat, away from direct heat, so the leather stays soft.",
                ),
                (
                    "How often should golf shoe soles be checked?",
                    "every 15 rounds",
                    "Check the traction soles every 15 rounds for worn lugs.",
                ),
                (
                    "What keeps golf shoe leather supple?",
                    "a leather conditioner",
                    "Apply a leather conditioner monthly to keep the shoes supple.",
                ),
            ),
        ),
    ),
    (
        (
            "Getting Accurate Data from Your Fitness Tracker",
            "Wearing and maintaining trackers and GPS watches.",
            (
                (
                    "Where should a fitness tracker be worn for accurate heart rate?",
                    "a finger's width above the wrist bone",
                    "Wear the tracker a finger's width above the wrist bone for accurate heart rate.",
                ),
                (
                    "How long does the fitness tracker battery last?",
                    "up to 7 days",
                    "The fitness tracker battery lasts up to 7 days on a single charge.",
                ),
                (
                    "What keeps a tracker's readings accurate over time?",
                    "regular firmware updates",
                    "Install regular firmware updates to keep the sensors calibrated.",
                ),
            ),
        ),
        (
            "Home Training Equipment: Safe Use and Care",
            "Setting up and maintaining dumbbells, bands and jump ropes.",
            (
                (
                    "What should be checked on jump ropes regularly?",
                    "fraying of the cable and the handle bearings",
                    "Check jump ropes regularly for fraying of the cable and the handle bearings.",
                ),
                (
                    "How often should resistance bands be replaced?",
                    "every 6 months",
                    "Latex bands weaken with use; replace them every 6 months.",
                ),
                (
                    "What weight range do the adjustable dumbbells cover?",
                    "5 to 52.5 pounds",
                    "Each adjustable dumbbell covers 5 to 52.5 pounds.",
                ),
            ),
        ),
    ),
)


#: How many products of a category get care-and-warranty facts in an org other than the service org at seed 0.
CARE_PRODUCTS = 4
_CLEANING = (
    "wipe it with a damp cloth and let it dry flat",
    "hand wash it in cold water with a mild soap",
    "rinse it with fresh water and let it air dry",
    "brush off dried dirt with a soft brush",
    "spot clean it with a sponge and warm water",
    "machine wash it on a gentle cycle at 30 degrees",
)
_STORAGE = (
    "in a cool, dry place out of direct sunlight",
    "loosely rolled in its carry bag",
    "hanging up, away from radiators",
    "flat on a shelf with nothing stacked on top",
)


#: A care section's facts about a product: the question, the sentence stating the answer (``{answer}``), and what
#: the answer is (the warranty, the way to clean it or store it, its material); :func:`care_section` writes them.
CARE_FORMS: tuple[tuple[str, str, str], ...] = (
    (
        "How long is the warranty on the {name}?",
        "The {name} is covered by a warranty of {answer} from the date of purchase.",
        "warranty",
    ),
    ("How should the {name} be cleaned?", "The {name} should be cleaned as follows: {answer}.", "cleaning"),
    ("How should the {name} be stored?", "The {name} should be stored {answer}.", "storage"),
    ("What is the {name} made of?", "The {name} is made of {answer}.", "material"),
)


def care_section(products: list[tuple[str, str]], rng: Any) -> tuple[str, list[tuple[str, str]]]:
    """A care-and-warranty section for a few of a category's products: its text and its facts.

    Orgs other than the service org at seed 0 (fixed byte for byte) add one to the first guide of each
    category, so that sibling orgs give knowledge questions no test set holds: every question names its
    product, and the answers are drawn here (a warranty of 1 to 5 years, a way to clean it and to store
    it) besides the product's material. The org keeps the original's 45 articles.

    Args:
        products: ``(name, material)`` of the category's products (names are unique in a catalog).
        rng: A numpy random generator (its own stream, so the rest of the org is unchanged).

    Example:
        >>> import numpy as np
        >>> text, facts = care_section([("Trail Pack", "ripstop nylon")], np.random.default_rng(0))
        >>> facts[3], all(answer in text for _question, answer in facts)
        (('What is the Trail Pack made of?', 'ripstop nylon'), True)
    """
    chosen = sorted(rng.choice(len(products), size=min(CARE_PRODUCTS, len(products)), replace=False).tolist())
    lines, facts = ["Care and warranty:"], []
    for index in chosen:
        name, material = products[index]
        years = int(rng.integers(1, 6))
        values = {
            "warranty": "1 year" if years == 1 else f"{years} years",
            "cleaning": _CLEANING[int(rng.integers(len(_CLEANING)))],
            "storage": _STORAGE[int(rng.integers(len(_STORAGE)))],
            "material": material,
        }
        facts += [(question.format(name=name), values[key]) for question, _sentence, key in CARE_FORMS]
        lines += [sentence.format(name=name, answer=values[key]) for _question, sentence, key in CARE_FORMS]
    return "\n".join(lines), facts
